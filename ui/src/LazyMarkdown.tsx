// The markdown renderer (react-markdown and its plugins: about a third of the app's script) loaded when it is first
// needed, not with the page: an empty chat or a page without answers never waits for it. Until it is there (or if it
// cannot load), the text shows as it was written.
import { lazy, Suspense } from "react";
import type { Citations } from "./Markdown";

const load = () => import("./Markdown");

interface Props {
  text: string;
  citations?: Citations<unknown>;
}

function Plain({ text }: Props) {
  return <p className="plain-text">{text}</p>;
}

const Rendered = lazy(() =>
  load().then(
    (module) => ({ default: module.Markdown as (props: Props) => React.JSX.Element }),
    () => ({ default: Plain }),
  ),
);

// Started when the browser has a moment, so the first answer is usually drawn rendered.
export function preloadMarkdown(): void {
  const start = () => void load().catch(() => undefined);
  if ("requestIdleCallback" in window) window.requestIdleCallback(start, { timeout: 3000 });
  else setTimeout(start, 1500);
}

export function LazyMarkdown<P>({ text, citations }: { text: string; citations?: Citations<P> }) {
  return (
    <Suspense fallback={<Plain text={text} />}>
      <Rendered text={text} citations={citations as Citations<unknown> | undefined} />
    </Suspense>
  );
}
