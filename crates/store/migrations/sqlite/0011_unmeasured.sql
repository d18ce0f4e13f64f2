-- Why a use's gains (XP, items, items lost in a death) could not be measured: "output cut by
-- tail" (its output held no readable state) or "no state printed before it" (nothing to compare
-- its totals with in this turn). NULL when they were measured, and for uses recorded before this
-- column existed. A separate column, not a key inside `xp`/`items`: those stay plain maps that
-- the score and the views read, and "unknown" must not read as "nothing gained".
-- Never edit this file once it has landed: add a new numbered migration instead.

ALTER TABLE uses ADD COLUMN unmeasured TEXT;
ALTER TABLE snippet_uses ADD COLUMN unmeasured TEXT;
