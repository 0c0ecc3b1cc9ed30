-- go 9 · a schedule's last error (backend.Schedule.LastError): a tick that
-- fails to start its run is recorded on its own schedule, which is then
-- left alone for a while (retry_at), instead of failing the whole fire
-- and holding up every other schedule of the namespace.
--
--   - last_error, last_error_at: the message of the last failed fire and
--     when it failed; NULL once a fire of the schedule succeeds or the
--     schedule is put again.
--   - failures: failed fires in a row (0 once one succeeds), which the
--     back-off doubles with (backend.ScheduleRetryDelay).
--   - retry_at: while in the future, the schedule is not fired
--     (due_schedules skips it); NULL when it is not failing.
--
-- ADD COLUMN with a constant default or none rewrites nothing.
ALTER TABLE {{schema}}."workflow_schedules"
  ADD COLUMN IF NOT EXISTS "last_error" TEXT,
  ADD COLUMN IF NOT EXISTS "last_error_at" TIMESTAMPTZ,
  ADD COLUMN IF NOT EXISTS "failures" INTEGER NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS "retry_at" TIMESTAMPTZ;

INSERT INTO {{schema}}."openworkflow_go_migrations" ("version")
VALUES (9)
ON CONFLICT DO NOTHING;
