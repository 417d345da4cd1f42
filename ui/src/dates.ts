// A note's or passage's date as a person reads it: "20 Jan 2026", or "19 Jan 2026 – 25 Jan 2026" for a span (the
// API writes "2026-01-20" and "2026-01-19..2026-01-25").
export function dateWords(date: string): string {
  const format = (day: string) =>
    new Date(`${day}T00:00:00`).toLocaleDateString(undefined, { day: "numeric", month: "short", year: "numeric" });
  return date.split("..").map(format).join(" – ");
}
