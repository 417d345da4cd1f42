import { dateWords } from "./dates";

// A note's or passage's date, as a chip: left out when it is only the file's modification time (when it was last
// edited, not what it is about), and when the path or a heading beside it already says the day ("Journal/2026-11-25.md"
// under "25 November 2026" needs no third "Nov 25, 2026"). A span ("2026-01-19..2026-01-25", a weekly note) is shown:
// "2026-W04" does not say which days.
export function DateChip({ date, source, shownIn }: { date: string; source: string; shownIn: string[] }) {
  if (!date || source === "modification time") return null;
  if (!date.includes("..") && shownIn.some((text) => text.includes(date))) return null;
  return (
    <span className="date-chip" title={`Dated by its ${source}`}>
      {dateWords(date)}
    </span>
  );
}
