-- L0: the minimum durable writes of one step in a one-commit-per-step
-- design: insert a small step row, update the run row, commit.
\set id random(1, 10000)
BEGIN;
INSERT INTO l0_steps (run_id, output) VALUES (:id, '{"i": 1}');
UPDATE l0_runs SET attempts = attempts + 1, updated_at = now() WHERE id = :id;
COMMIT;
