ALTER TABLE calls DROP COLUMN call_campaign_id;
DROP TABLE call_campaign_targets;
DROP TABLE call_campaigns;
