// A filter drawn from what the vault has (its folders or tags, with counts), not typed: a list to pick from, and
// the picked ones as chips, each with a button that removes it.
import type { FacetCount } from "../gen/secondbrain/retrieve/v1/retrieve_service_pb";

export function FilterPicker({
  label,
  placeholder,
  options,
  selected,
  prefix = "",
  loaded,
  onChange,
}: {
  label: string;
  placeholder: string;
  options: readonly FacetCount[];
  selected: readonly string[];
  prefix?: string;
  // Whether the vault's folders or tags have been read: until then (or when they cannot be, offline) an empty list
  // says nothing about the vault.
  loaded: boolean;
  onChange: (values: string[]) => void;
}) {
  const left = options.filter((option) => !selected.includes(option.value));
  return (
    <div className="filter-picker">
      <select
        aria-label={label}
        value=""
        onChange={(e) => {
          if (e.target.value) onChange([...selected, e.target.value]);
        }}
        disabled={loaded && !left.length}
      >
        <option value="">{options.length || !loaded ? placeholder : `No ${label.toLowerCase()} in the vault`}</option>
        {left.map((option) => (
          <option key={option.value} value={option.value}>
            {prefix}
            {option.value} ({option.count})
          </option>
        ))}
      </select>
      {selected.map((value) => (
        <span key={value} className="filter-chip">
          {prefix}
          {value}
          <button
            type="button"
            className="icon"
            aria-label={`Remove the ${label.toLowerCase().replace(/s$/, "")} filter ${prefix}${value}`}
            onClick={() => onChange(selected.filter((other) => other !== value))}
          >
            ×
          </button>
        </span>
      ))}
    </div>
  );
}
