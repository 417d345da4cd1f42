// Browsing without typing, at /browse.
export function BrowsePage({ onUnauthenticated }: { onUnauthenticated: () => void }) {
  void onUnauthenticated;
  return <section className="page">Browse</section>;
}
