-- A campaign's messages are found through messages_campaign_contact (campaign_id first); a second
-- index holding the status only made every status change write one more index entry.
DROP INDEX messages_campaign;
