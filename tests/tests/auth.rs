//! Authentication: SCRAM-SHA-256 when the server has a password.

use iolab_tests::{sqlstate, TestServer};
use tokio_postgres::NoTls;

/// The SQLSTATE a connection to `conninfo` is refused with.
async fn refusal(conninfo: &str) -> String {
    let err = tokio_postgres::connect(conninfo, NoTls)
        .await
        .err()
        .unwrap_or_else(|| panic!("{conninfo} was accepted"));
    sqlstate(&err)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_password_is_required_when_configured() {
    let server = TestServer::start_with("auth", &["--password", "s3cret"]);
    let good = format!("{} password=s3cret", server.conn_str());
    let (client, conn) = tokio_postgres::connect(&good, NoTls)
        .await
        .expect("the right password is accepted");
    tokio::spawn(conn);
    let one: i32 = client
        .query_one("SELECT 1::int4", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(one, 1);

    // A wrong password is refused.
    let bad = format!("{} password=wrong", server.conn_str());
    assert_eq!(refusal(&bad).await, "28P01");
    // A database other than postgres is refused, whatever the password.
    let elsewhere = good.replace("dbname=postgres", "dbname=nosuchdb");
    assert_eq!(refusal(&elsewhere).await, "3D000");
    // A role that does not exist fails as a wrong password does.
    let stranger = good.replace("user=postgres", "user=stranger");
    assert_eq!(refusal(&stranger).await, "28P01");

    // Without a password the client cannot answer the server's SASL request.
    assert!(
        tokio_postgres::connect(&server.conn_str(), NoTls)
            .await
            .is_err(),
        "no password is refused"
    );

    // psql with PGPASSWORD works too.
    let out = std::process::Command::new("psql")
        .args([
            "-X",
            "-At",
            "-h",
            "127.0.0.1",
            "-p",
            &server.port.to_string(),
            "-U",
            "postgres",
            "-c",
            "SELECT 42",
        ])
        .env("PGPASSWORD", "s3cret")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "42",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
