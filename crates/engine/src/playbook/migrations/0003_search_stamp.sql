-- Each indexed skill file's stamp (length, modification and change times, inode), so a search
-- re-reads only the files that changed; inactive skills are remembered too (search_row -1),
-- so drafts and retired skills are not re-read on every search either.
ALTER TABLE skill_indexed ADD COLUMN stamp TEXT NOT NULL DEFAULT '';
