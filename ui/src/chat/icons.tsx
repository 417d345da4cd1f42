// The chat's icons, drawn inline (no icon font to load); each is decoration, its button carries the words.
const PATHS = {
  menu: "M3 6h18v2H3zm0 5h18v2H3zm0 5h18v2H3z",
  rename: "M4 17.2V20h2.8l8.3-8.3-2.8-2.8L4 17.2zm13.7-7.5a1 1 0 0 0 0-1.4l-2-2a1 1 0 0 0-1.4 0l-1.5 1.5 2.8 2.8z",
  export: "M12 3v10.2l3.6-3.6L17 11l-5 5-5-5 1.4-1.4 3.6 3.6V3h2zM5 18h14v2H5z",
  delete: "M9 3h6l1 2h4v2H4V5h4l1-2zm-3 6h12l-1 12H7L6 9z",
  // Eight teeth around a hole (fill-rule evenodd).
  settings: [
    "M19.3 10.0L21.9 10.3L21.9 13.7L19.3 14.0L18.6 15.7L20.2 17.8L17.8 20.2L15.7 18.6L14.0 19.3L13.7 21.9",
    "L10.3 21.9L10.0 19.3L8.3 18.6L6.2 20.2L3.8 17.8L5.4 15.7L4.7 14.0L2.1 13.7L2.1 10.3L4.7 10.0L5.4 8.3",
    "L3.8 6.2L6.2 3.8L8.3 5.4L10.0 4.7L10.3 2.1L13.7 2.1L14.0 4.7L15.7 5.4L17.8 3.8L20.2 6.2L18.6 8.3zM12",
    " 15.3a3.3 3.3 0 1 0 0-6.6 3.3 3.3 0 0 0 0 6.6z",
  ].join(""),
};

export function Icon({ name, size = 18 }: { name: keyof typeof PATHS; size?: number }) {
  return (
    <svg viewBox="0 0 24 24" width={size} height={size} aria-hidden="true" focusable="false">
      <path fill="currentColor" fillRule="evenodd" d={PATHS[name]} />
    </svg>
  );
}
