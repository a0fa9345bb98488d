//! Stores in Azure and GCS buckets, against emulators each test starts and
//! stops on loopback: Azurite for `az://` (Shared Key signatures checked),
//! fake-gcs-server for `gs://`. The scenarios are the ones `s3://` passes
//! on moto (tests/common/buckets.rs): every fixture reads back
//! byte-exactly, a missing store and a missing `dict.zr` fail clearly, an
//! object replaced under a reader is refused, a sealed store answers `info`
//! and `verify` from the bucket. On Azurite the stores go up with `zrecord
//! push` (meta.zr last, multipart), and a wrong key is refused.
//! fake-gcs-server cannot take uploads through GCS's XML API, which `zrecord
//! push` uses (see tests/common/fake_gcs.rs): its stores are published
//! through its JSON API, and a test pins down that gap so it is seen when it
//! closes.

#[path = "common/azurite.rs"]
mod azurite;
#[path = "common/buckets.rs"]
mod buckets;
mod common;
#[path = "common/fake_gcs.rs"]
mod fake_gcs;

use azurite::Azurite;
use buckets::Emulator;
use fake_gcs::FakeGcs;

#[test]
fn az_every_fixture_pushes_and_reads_back_byte_exactly() {
    buckets::every_fixture_reads_back(&Azurite::start());
}

#[test]
fn az_every_command_that_reads_a_store_takes_az_urls() {
    buckets::every_command_takes_bucket_urls(&Azurite::start());
}

#[test]
fn az_missing_store_missing_dict_and_replaced_object_fail_clearly() {
    let azurite = Azurite::start();
    buckets::missing_store_and_missing_dict_fail_clearly(&azurite);
    buckets::replaced_object_is_refused(&azurite);
}

#[test]
fn az_push_then_info_and_verify_from_the_container() {
    let azurite = Azurite::start();
    buckets::sealed_store_verifies_from_the_bucket(&azurite);
    buckets::big_files_go_up_in_parts(&azurite);
}

#[test]
fn az_wrong_key_is_refused_naming_the_credentials() {
    let azurite = Azurite::start();
    let f = &common::fixtures()[0];
    buckets::ok(&azurite, &[&"push", &f.path(), &azurite.url("keys")]);
    let mut cmd = buckets::zrecord(&azurite);
    // A valid base64 key, not the account's.
    azurite.env_with_key(&mut cmd, "bm90LXRoZS1rZXk=");
    let err = buckets::failed(buckets::run_with(cmd, &[&"info", &azurite.url("keys")]));
    assert!(err.contains("credentials") && err.contains("AZURE_STORAGE_ACCOUNT_KEY"), "{err}");
    assert!(err.contains("403"), "{err}");
}

#[test]
fn gs_every_fixture_reads_back_byte_exactly() {
    buckets::every_fixture_reads_back(&FakeGcs::start());
}

#[test]
fn gs_every_command_that_reads_a_store_takes_gs_urls() {
    buckets::every_command_takes_bucket_urls(&FakeGcs::start());
}

#[test]
fn gs_missing_store_missing_dict_and_replaced_object_fail_clearly() {
    let gcs = FakeGcs::start();
    buckets::missing_store_and_missing_dict_fail_clearly(&gcs);
    buckets::replaced_object_is_refused(&gcs);
}

#[test]
fn gs_sealed_store_answers_info_and_verify_from_the_bucket() {
    buckets::sealed_store_verifies_from_the_bucket(&FakeGcs::start());
}

/// `zrecord push` to fake-gcs-server fails on the emulator's side: it does
/// not serve the XML API's `PUT /bucket/object`. When this test fails, the
/// emulator learned uploads: make `FakeGcs::pushes` true and run
/// `big_files_go_up_in_parts` on it too.
#[test]
fn gs_push_meets_the_emulators_missing_xml_upload() {
    let gcs = FakeGcs::start();
    let f = &common::fixtures()[0];
    let err =
        buckets::failed(buckets::run_with(buckets::zrecord(&gcs), &[&"push", &f.path(), &gcs.url("p")]));
    assert!(err.contains("400 Bad Request") && err.contains("invalid uploadType"), "{err}");
}
