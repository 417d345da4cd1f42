// What the chat page needs before a question: the options (providers, models, personas), the settings, and from
// the index the vault's name (for "Open in Obsidian") and its Obsidian "Strict line breaks".
import { useEffect, useState } from "react";
import { chat } from "../api";
import type { GetOptionsResponse, Settings } from "../gen/secondbrain/chat/v1/chat_service_pb";
import { readIndexStatus, vaultName as vaultNameIn } from "../indexStatus";


export function useChatSetup(fail: (error: unknown) => void) {
  const [options, setOptions] = useState<GetOptionsResponse>();
  const [settings, setSettings] = useState<Settings>();
  const [vaultName, setVaultName] = useState<string>();
  const [strictLineBreaks, setStrictLineBreaks] = useState(false);

  useEffect(() => {
    Promise.all([chat.getOptions({}), chat.getSettings({})])
      .then(([opts, current]) => {
        setOptions(opts);
        setSettings(current.settings);
      })
      .catch(fail);
    // For "Open in Obsidian"; without it (no sync yet, the ingest service down) the link is left out.
    readIndexStatus()
      .then((status) => {
        setVaultName(vaultNameIn(status) || undefined);
        setStrictLineBreaks(status.strictLineBreaks);
      })
      .catch(() => setVaultName(undefined));
  }, [fail]);

  return { options, settings, setSettings, vaultName, strictLineBreaks };
}
