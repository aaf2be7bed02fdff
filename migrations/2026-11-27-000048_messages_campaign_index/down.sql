CREATE INDEX messages_campaign ON messages (campaign_id, status) WHERE campaign_id IS NOT NULL;
