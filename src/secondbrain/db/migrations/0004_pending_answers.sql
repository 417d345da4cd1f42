-- An answer row is written when the question is, before the answer exists, so a question is never left without
-- one. 'pending' marks that row until the turn ends: a client that stopped a stream can wait for the outcome
-- instead of reading a placeholder. A row left 'pending' by a chat service that died keeps its placeholder error.
ALTER TABLE chat_messages DROP CONSTRAINT chat_messages_status_check;
ALTER TABLE chat_messages
    ADD CONSTRAINT chat_messages_status_check CHECK (status IN ('complete', 'incomplete', 'pending'));
