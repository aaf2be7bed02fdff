//! The rules of records, as the service applies them.

use data_tables::records::list::ListQuery;
use data_tables::{RecordId, RecordWrite};
use kernel::{Caller, ErrorKind};
use serde_json::json;

use super::support::{definition, setup, tenant};

#[tokio::test]
async fn every_column_limit_a_record_breaks_is_named_at_once() {
    let s = setup().await;
    let body = RecordWrite::of(json!({"name": "n".repeat(21), "score": 500, "segment": "online"}));
    let error = s.data.create_record(&s.caller, s.customers, &body).await.expect_err("over the limits");
    assert_eq!(error.kind, ErrorKind::Validation);
    for field in ["name", "score", "segment"] {
        assert!(error.errors.contains_key(field), "{field}: {:?}", error.errors);
    }
    let missing = s.data.create_record(&s.caller, s.customers, &RecordWrite::default()).await.expect_err("no data");
    assert!(missing.errors.contains_key("data"), "{:?}", missing.errors);

    let fits = RecordWrite::of(json!({"name": "n".repeat(20), "score": 100, "segment": "retail"}));
    assert!(s.data.create_record(&s.caller, s.customers, &fits).await.is_ok());
}

#[tokio::test]
async fn a_record_created_is_found_by_a_filter_on_its_values() {
    let s = setup().await;
    for (name, segment, score) in [("Amina", "retail", 80), ("Baraka", "wholesale", 60), ("Zawadi", "retail", 40)] {
        let body = RecordWrite::of(json!({"name": name, "segment": segment, "score": score}));
        s.data.create_record(&s.caller, s.customers, &body).await.expect("created");
    }
    let filter = json!({"all": [{"column": "segment", "op": "equals", "value": "retail"},
                                {"column": "score", "op": "greater_than", "value": 50}]});
    let query = ListQuery { filter: Some(filter.to_string()), ..ListQuery::default() };
    let page = s.data.list_records(&s.caller, s.customers, query).await.expect("page");
    let names: Vec<_> = page.records.iter().map(|r| r.data["name"].clone()).collect();
    assert_eq!(names, [json!("Amina")]);

    let id = RecordId(page.records[0].id);
    let read = s.data.get_record(&s.caller, s.customers, id).await.expect("read");
    assert_eq!(read.data["score"], json!(80));
}

#[tokio::test]
async fn another_tenant_finds_neither_the_table_nor_its_records() {
    let s = setup().await;
    let body = RecordWrite::of(json!({"name": "Amina"}));
    let record = RecordId(s.data.create_record(&s.caller, s.customers, &body).await.expect("created").id);

    let other = tenant(&s.pool, "Other").await;
    // the same definition applied by another tenant is a table of its own
    s.data.apply(other, definition()).await.expect("apply");
    let stranger = Caller::operator(other, "255");
    let error = s.data.get_record(&stranger, s.customers, record).await.expect_err("not theirs");
    assert_eq!(error.kind, ErrorKind::NotFound);
    let error = s.data.create_record(&stranger, s.customers, &body).await.expect_err("not theirs");
    assert_eq!(error.kind, ErrorKind::NotFound);
    let error = s.data.delete_record(&stranger, s.customers, record).await.expect_err("not theirs");
    assert_eq!(error.kind, ErrorKind::NotFound);
    assert!(s.data.get_record(&s.caller, s.customers, record).await.is_ok(), "still there for its tenant");
}
