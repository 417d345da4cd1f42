// The note reader, at /note/<path>.
export function ReaderPage({ onUnauthenticated }: { onUnauthenticated: () => void }) {
  void onUnauthenticated;
  return <section className="page">Reader</section>;
}
