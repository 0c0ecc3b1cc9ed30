-- go 6 · run counts per status kept by triggers (CountWorkflowRuns,
-- GET /v1/runs/counts). Counting the rows of workflow_runs took 0.1–0.8 s
-- with 1,000,000 finished runs in a namespace (every row, or every index
-- entry, is read); summing these counters takes well under a millisecond
-- (docs/benchmarks.md).
--
--   - Triggers, because every writer of workflow_runs must keep the
--     counters exact, and the TypeScript SDK writes the same table without
--     knowing of them. A count cached below a time watermark is not exact:
--     finished_at comes from several clocks (the TypeScript worker writes a
--     failure's from its own), a transaction may commit a time older than
--     the watermark after the cache was taken, and retries and deletions
--     change rows below it.
--   - Statement-level triggers with transition tables: one upsert per
--     (namespace, status) a statement changed, however many rows it wrote
--     (a batch start of 1,000 runs, a claim of 100, a group commit of many
--     completions). A row-level trigger would update one counter row once
--     per run, and 1,000 updates of a row in one transaction leave a chain
--     of 1,000 versions of it that each later update walks.
--   - An UPDATE trigger cannot name columns when it has transition tables,
--     so it fires on every UPDATE of workflow_runs (a heartbeat too) and
--     adds nothing unless the statement moved a run between statuses: old
--     rows count -1, new rows +1, per (namespace, status), and only the
--     non-zero sums are written. No join is needed, so it stays exact even
--     if a statement changed a key.
--   - "slot" is the backend process id of the writing session: two
--     concurrent transactions never write the same counter row, so the
--     counters add no lock wait and no deadlock to the hot path. A count is
--     the sum over slots; fold_run_counts folds the rows of sessions that
--     have ended into slot 0, so the table holds a row per live session and
--     status, not one per session ever.
--   - TRUNCATE fires no row or statement trigger for rows, so its own
--     trigger empties the counters too.
--   - The counters start from the rows present, counted in this migration's
--     transaction under a SHARE ROW EXCLUSIVE lock on workflow_runs (the
--     one CREATE TRIGGER takes), taken before the triggers are made: no
--     write can commit between the count and the triggers. Writers wait for
--     this transaction, whose length is that of one count (0.1–1 s per
--     million runs); readers do not.
CREATE TABLE IF NOT EXISTS {{schema}}."openworkflow_go_run_counts" (
  "namespace_id" TEXT NOT NULL,
  "status" TEXT NOT NULL,
  "slot" INTEGER NOT NULL,
  "n" BIGINT NOT NULL,
  PRIMARY KEY ("namespace_id", "status", "slot")
);

CREATE OR REPLACE FUNCTION {{schema}}."openworkflow_go_count_runs"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO {{schema}}."openworkflow_go_run_counts" AS c ("namespace_id", "status", "slot", "n")
    SELECT r."namespace_id", r."status", pg_backend_pid(), COUNT(*)
    FROM "new_runs" AS r
    GROUP BY r."namespace_id", r."status"
    ON CONFLICT ("namespace_id", "status", "slot") DO UPDATE SET "n" = c."n" + EXCLUDED."n";
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO {{schema}}."openworkflow_go_run_counts" AS c ("namespace_id", "status", "slot", "n")
    SELECT r."namespace_id", r."status", pg_backend_pid(), -COUNT(*)
    FROM "old_runs" AS r
    GROUP BY r."namespace_id", r."status"
    ON CONFLICT ("namespace_id", "status", "slot") DO UPDATE SET "n" = c."n" + EXCLUDED."n";
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO {{schema}}."openworkflow_go_run_counts" AS c ("namespace_id", "status", "slot", "n")
    SELECT d."namespace_id", d."status", pg_backend_pid(), SUM(d."n")
    FROM (
      SELECT r."namespace_id", r."status", 1 AS "n" FROM "new_runs" AS r
      UNION ALL
      SELECT r."namespace_id", r."status", -1 FROM "old_runs" AS r
    ) AS d
    GROUP BY d."namespace_id", d."status"
    HAVING SUM(d."n") <> 0
    ON CONFLICT ("namespace_id", "status", "slot") DO UPDATE SET "n" = c."n" + EXCLUDED."n";
  ELSE -- TRUNCATE
    DELETE FROM {{schema}}."openworkflow_go_run_counts";
  END IF;
  RETURN NULL;
END
$$;

-- The triggers, each created unless it exists (this line's scripts may run
-- again on a schema whose version row was removed). CREATE TRIGGER takes a
-- SHARE ROW EXCLUSIVE lock, which lets readers through; DROP TRIGGER IF
-- EXISTS would take an ACCESS EXCLUSIVE one.
DO $$
DECLARE
  t record;
BEGIN
  LOCK TABLE {{schema}}."workflow_runs" IN SHARE ROW EXCLUSIVE MODE;
  FOR t IN SELECT * FROM (VALUES
    ('openworkflow_go_count_inserted_runs', 'INSERT', 'REFERENCING NEW TABLE AS "new_runs"'),
    ('openworkflow_go_count_updated_runs', 'UPDATE', 'REFERENCING OLD TABLE AS "old_runs" NEW TABLE AS "new_runs"'),
    ('openworkflow_go_count_deleted_runs', 'DELETE', 'REFERENCING OLD TABLE AS "old_runs"'),
    ('openworkflow_go_count_truncated_runs', 'TRUNCATE', '')
  ) AS v("name", "event", "referencing")
  LOOP
    IF NOT EXISTS (
      SELECT 1 FROM pg_trigger
      WHERE tgrelid = '{{schema}}."workflow_runs"'::regclass AND tgname = t."name"
    ) THEN
      EXECUTE format('CREATE TRIGGER %I AFTER %s ON {{schema}}."workflow_runs" %s FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}."openworkflow_go_count_runs"()',
        t."name", t."event", t."referencing");
    END IF;
  END LOOP;
END
$$;

-- The rows present, counted under the triggers' lock (see above).
DELETE FROM {{schema}}."openworkflow_go_run_counts";
INSERT INTO {{schema}}."openworkflow_go_run_counts" ("namespace_id", "status", "slot", "n")
SELECT wr."namespace_id", wr."status", 0, COUNT(*)
FROM {{schema}}."workflow_runs" AS wr
GROUP BY wr."namespace_id", wr."status";

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (6)
ON CONFLICT DO NOTHING;
