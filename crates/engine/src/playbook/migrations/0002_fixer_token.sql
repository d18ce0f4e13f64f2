-- The digest of the token handed to the fixer started for a report: only that fixer may file
-- the report's revision (the assistant that reported never sees it).
ALTER TABLE usage ADD COLUMN fixer_token TEXT;
