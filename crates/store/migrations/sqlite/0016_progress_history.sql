-- XP and levels over time beside the wealth: each hourly point of `avatar_wealth` also keeps the
-- avatar's total XP and total level from the same report, so "since your last visit" can say
-- how much the family gained. Points written before this migration have neither (NULL).
-- Never edit this file once it has landed: add a new numbered migration instead.
ALTER TABLE avatar_wealth ADD COLUMN total_xp INTEGER;
ALTER TABLE avatar_wealth ADD COLUMN total_level INTEGER;
