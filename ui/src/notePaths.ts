// Names a person reads, from the paths the API gives.

// "Home/Kitchen Renovation.md" -> "Kitchen Renovation".
export function noteName(path: string): string {
  return (path.split("/").pop() ?? path).replace(/\.md$/i, "");
}

// The vault's name as Obsidian knows it: the last part of the folder the index was last synced from.
export function vaultNameOf(vaultPath: string): string {
  return vaultPath.replace(/[\\/]+$/, "").split(/[\\/]/).pop() ?? "";
}
