-- Attachments (PDFs, pictures, canvases, Office files) are indexed beside notes, as their text rendered to markdown
-- (a heading per page, slide, sheet or card). A passage of a PDF or a presentation keeps the pages it comes from,
-- so it can be cited and opened there (`paper.pdf#page=12`); a note's passages have none.
ALTER TABLE vault_chunks
    ADD COLUMN page_start integer CHECK (page_start >= 1),
    ADD COLUMN page_end integer CHECK (page_end >= page_start);
