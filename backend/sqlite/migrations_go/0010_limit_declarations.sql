-- go 10 · who declared a workflow's limits, and the different limits the
-- last change replaced, as PostgreSQL's go migration 10
-- (backend/postgres/migrations_go/0010_claim_order.sql says why): two
-- deployments declaring different limits are seen rather than flipping
-- them silently. workflow_limits is this SDK's own table. (The claim's
-- new priority index is created at open, with go migration 8's indexes:
-- sql/migrate.sql.)
ALTER TABLE "workflow_limits" ADD COLUMN "declared_by" TEXT;
ALTER TABLE "workflow_limits" ADD COLUMN "replaced" TEXT;
ALTER TABLE "workflow_limits" ADD COLUMN "replaced_at" TEXT;

INSERT OR IGNORE INTO "openworkflow_go_migrations" ("version") VALUES (10);
