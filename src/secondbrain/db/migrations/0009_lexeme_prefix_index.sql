-- Retrieval looks up the indexed words that begin with a query word the index does not have (its stand-ins, for
-- "joiner" where the notes say "joinery"). A range over byte order finds them whatever the database's collation.

CREATE INDEX lexeme_stats_prefix_idx ON lexeme_stats (lexeme COLLATE "C");
