DROP TABLE IF EXISTS lead_pending_updates;
DROP TABLE IF EXISTS lead_fields;
DROP TABLE IF EXISTS lead_activities;
DROP TABLE IF EXISTS lead_label_links;
DROP TABLE IF EXISTS lead_labels;
DROP TABLE IF EXISTS lead_identities;
DROP TABLE IF EXISTS leads;
