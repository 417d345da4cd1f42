// Which passages an answer cites: [n] in its text (not inside code). Apart from the markdown renderer, so the chat
// can list an answer's sources before (or without) the renderer's script.
export const CITATION = /\[(\d+)\]/g;

// The citations found in an answer's text, in the order first cited: the same rule as the buttons, so the sources
// listed as cited are the ones the answer links (a [n] inside code is not a citation).
export function citedNumbers(text: string): number[] {
  const withoutCode = text.replace(/```[\s\S]*?(```|$)/g, "").replace(/`[^`\n]*`/g, "");
  const seen = new Set<number>();
  for (const match of withoutCode.matchAll(CITATION)) seen.add(Number(match[1]));
  return [...seen];
}
