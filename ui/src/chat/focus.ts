// Focus for what the chat opens over itself: a dialog takes focus when it opens (its [data-autofocus] element, or
// itself), a modal one keeps Tab inside it, and on closing focus goes back to where it was, if it is not already
// somewhere the person chose (a click on another control).
import { type RefObject, useEffect } from "react";

const FOCUSABLE = [
  "a[href]",
  ...["button", "input", "select", "textarea"].map((tag) => `${tag}:not([disabled])`),
  '[tabindex]:not([tabindex="-1"])',
].join(", ");

export function useDialogFocus(ref: RefObject<HTMLElement | null>, { modal = false }: { modal?: boolean } = {}) {
  useEffect(() => {
    const node = ref.current;
    if (!node) return;
    const before = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    (node.querySelector<HTMLElement>("[data-autofocus]") ?? node).focus();

    function keepInside(event: KeyboardEvent) {
      if (event.key !== "Tab" || !node) return;
      const focusable = [...node.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((e) => e.offsetParent !== null);
      if (!focusable.length) return;
      const first = focusable[0];
      const last = focusable[focusable.length - 1];
      if (event.shiftKey && (document.activeElement === first || document.activeElement === node)) {
        event.preventDefault();
        last.focus();
      } else if (!event.shiftKey && document.activeElement === last) {
        event.preventDefault();
        first.focus();
      }
    }
    if (modal) node.addEventListener("keydown", keepInside);
    return () => {
      node.removeEventListener("keydown", keepInside);
      const now = document.activeElement;
      if (before?.isConnected && (!now || now === document.body || node.contains(now))) before.focus();
    };
  }, [ref, modal]);
}
