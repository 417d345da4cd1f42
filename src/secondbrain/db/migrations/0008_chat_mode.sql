-- How a turn answers (chat settings): 'rag', one retrieval then the answer, or 'agent', where the model may also
-- search, read notes and follow links with the note tools. NULL is the vault's default (`chat.mode`).

ALTER TABLE chat_settings ADD COLUMN mode text CHECK (mode IN ('rag', 'agent'));
