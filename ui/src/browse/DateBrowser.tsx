// Notes by the days they are from (their own dates, as the index read them): the last week and month at a click,
// and a month's calendar where each day with notes links to them, with the months that have notes beside it.
import { Link } from "react-router";
import type { FacetCount } from "../gen/secondbrain/retrieve/v1/retrieve_service_pb";
import { browseUrl } from "../routes";

export function isoDay(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

function daysBefore(date: Date, days: number): Date {
  const copy = new Date(date);
  copy.setDate(copy.getDate() - days);
  return copy;
}

export function lastDays(days: number, today = new Date()): { from: string; to: string } {
  return { from: isoDay(daysBefore(today, days - 1)), to: isoDay(today) };
}

function monthName(month: string): string {
  return new Date(`${month}-01T00:00:00`).toLocaleDateString(undefined, { month: "long", year: "numeric" });
}

function shiftMonth(month: string, by: number): string {
  const [year, number] = month.split("-").map(Number);
  const date = new Date(year, number - 1 + by, 1);
  return isoDay(date).slice(0, 7);
}

function monthRange(month: string): { from: string; to: string } {
  const [year, number] = month.split("-").map(Number);
  return { from: `${month}-01`, to: isoDay(new Date(year, number, 0)) };
}

function Calendar({ month, counts, selected }: { month: string; counts: ReadonlyMap<string, number>; selected?: string }) {
  const [year, number] = month.split("-").map(Number);
  const first = new Date(year, number - 1, 1);
  const lead = (first.getDay() + 6) % 7; // Monday first
  const length = new Date(year, number, 0).getDate();
  const cells: (string | null)[] = [...Array(lead).fill(null)];
  for (let day = 1; day <= length; day++) cells.push(`${month}-${String(day).padStart(2, "0")}`);
  while (cells.length % 7) cells.push(null);
  const weeks = Array.from({ length: cells.length / 7 }, (_, i) => cells.slice(i * 7, i * 7 + 7));
  const weekdays = Array.from({ length: 7 }, (_, i) =>
    new Date(2024, 0, 1 + i).toLocaleDateString(undefined, { weekday: "narrow" }),
  );
  const longWeekdays = Array.from({ length: 7 }, (_, i) =>
    new Date(2024, 0, 1 + i).toLocaleDateString(undefined, { weekday: "long" }),
  );
  return (
    <table className="calendar" aria-label={`Notes in ${monthName(month)}`}>
      <thead>
        <tr>
          {weekdays.map((day, i) => (
            <th key={i} scope="col" abbr={longWeekdays[i]}>
              {day}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {weeks.map((week, i) => (
          <tr key={i}>
            {week.map((day, j) => {
              if (!day) return <td key={j} />;
              const count = counts.get(day) ?? 0;
              const label = new Date(`${day}T00:00:00`).toLocaleDateString(undefined, { day: "numeric", month: "long" });
              return (
                <td key={j} className={day === selected ? "current" : undefined}>
                  {count ? (
                    <Link
                      to={browseUrl({ from: day, to: day })}
                      aria-label={`${label}: ${count} note${count === 1 ? "" : "s"}`}
                      aria-current={day === selected ? "date" : undefined}
                    >
                      {Number(day.slice(8))}
                    </Link>
                  ) : (
                    <span className="empty-day">{Number(day.slice(8))}</span>
                  )}
                </td>
              );
            })}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function DateBrowser({
  days,
  from,
  to,
  undated,
}: {
  days: readonly FacetCount[];
  from: string;
  to: string;
  undated: number;
}) {
  const counts = new Map(days.map((day) => [day.value, day.count]));
  const months = new Map<string, number>();
  for (const day of days) months.set(day.value.slice(0, 7), (months.get(day.value.slice(0, 7)) ?? 0) + day.count);
  const newestMonth = days.length ? days[days.length - 1].value.slice(0, 7) : isoDay(new Date()).slice(0, 7);
  const month = (from || to || "").slice(0, 7) || newestMonth;
  const week = lastDays(7);
  const thirty = lastDays(30);
  const oneDay = from && from === to ? from : undefined;
  return (
    <div className="date-browser">
      <ul className="quick-ranges">
        <li>
          <Link to={browseUrl(week)} aria-current={from === week.from && to === week.to ? "page" : undefined}>
            Last 7 days
          </Link>
        </li>
        <li>
          <Link to={browseUrl(thirty)} aria-current={from === thirty.from && to === thirty.to ? "page" : undefined}>
            Last 30 days
          </Link>
        </li>
      </ul>
      <div className="calendar-head">
        <Link to={browseUrl(monthRange(shiftMonth(month, -1)))} aria-label={`Previous month, ${monthName(shiftMonth(month, -1))}`}>
          ‹
        </Link>
        <Link to={browseUrl(monthRange(month))} className="month-name">
          {monthName(month)}
        </Link>
        <Link to={browseUrl(monthRange(shiftMonth(month, 1)))} aria-label={`Next month, ${monthName(shiftMonth(month, 1))}`}>
          ›
        </Link>
      </div>
      <Calendar month={month} counts={counts} selected={oneDay} />
      {months.size ? (
        <details className="months">
          <summary>Every month with notes</summary>
          <ul>
            {[...months].reverse().map(([value, count]) => (
              <li key={value}>
                <Link to={browseUrl(monthRange(value))}>{monthName(value)}</Link> <span className="count">{count}</span>
              </li>
            ))}
          </ul>
        </details>
      ) : (
        <p className="muted small">No note has a date yet.</p>
      )}
      {undated ? <p className="muted small">{undated} notes have no date of their own.</p> : null}
    </div>
  );
}
