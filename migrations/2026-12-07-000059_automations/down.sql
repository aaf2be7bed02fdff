DROP TABLE automation_schedules;
DROP TRIGGER events_automations_fan_out ON events;
DROP FUNCTION automations_fan_out();
DROP TABLE automation_deliveries;
DROP TABLE automation_subscriptions;
DROP INDEX events_log;
