-- An answer being written is 'pending' under a lease its chat process renews every second or so (with the text
-- streamed so far); an answer whose lease ran out belongs to a chat process that died mid-turn, and any chat process
-- closes it as incomplete, keeping that text. Before, such an answer stayed 'pending' for 15 minutes (the longest a
-- turn could run) and its streamed text was lost. Rows written before this migration have no lease: their creation
-- time stands in for it.
ALTER TABLE chat_messages ADD COLUMN alive_at timestamptz;
CREATE INDEX chat_messages_pending_idx ON chat_messages (id) WHERE status = 'pending';
