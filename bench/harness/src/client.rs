//! A client session on iolab or PostgreSQL 18: simple-query statements returning text rows,
//! and the NOTICE/INFO messages the server sent (ANALYZE VERBOSE reports through them).

use futures::StreamExt;
use std::sync::{Arc, Mutex};
use tokio_postgres::{AsyncMessage, NoTls, SimpleQueryMessage};

pub type Res<T> = Result<T, String>;

pub struct Session {
    client: tokio_postgres::Client,
    /// Messages received since the last `take_notices`; bounded by what one statement sends.
    notices: Arc<Mutex<Vec<String>>>,
}

impl Session {
    pub async fn connect(port: u16, host: &str) -> Res<Session> {
        let conninfo =
            format!("host={host} port={port} user=postgres dbname=postgres connect_timeout=10");
        let (client, mut connection) = tokio_postgres::connect(&conninfo, NoTls)
            .await
            .map_err(|e| format!("connect to {host}:{port}: {e}"))?;
        let notices = Arc::new(Mutex::new(Vec::new()));
        let sink = notices.clone();
        tokio::spawn(async move {
            let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(Ok(message)) = messages.next().await {
                if let AsyncMessage::Notice(notice) = message {
                    sink.lock().unwrap().push(notice.message().to_string());
                }
            }
        });
        Ok(Session { client, notices })
    }

    /// Runs one statement; its rows, each as the text of its columns (NULL → "").
    pub async fn query(&self, sql: &str) -> Res<Vec<Vec<String>>> {
        let messages = self
            .client
            .simple_query(sql)
            .await
            .map_err(|e| match e.as_db_error() {
                Some(db) => format!("{} ({}) in: {sql}", db.message(), db.code().code()),
                None => format!("{e} in: {sql}"),
            })?;
        Ok(messages
            .into_iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(row) => Some(
                    (0..row.len())
                        .map(|i| row.get(i).unwrap_or("").to_string())
                        .collect(),
                ),
                _ => None,
            })
            .collect())
    }

    /// Runs statements in order; the rows of the last one that returned any.
    pub async fn run_all(&self, statements: &[String]) -> Res<Vec<Vec<String>>> {
        let mut last = Vec::new();
        for sql in statements {
            let rows = self.query(sql).await?;
            if !rows.is_empty() {
                last = rows;
            }
        }
        Ok(last)
    }

    /// The first column of the first row, as a number.
    pub async fn number(&self, sql: &str) -> Res<f64> {
        let rows = self.query(sql).await?;
        let cell = rows
            .first()
            .and_then(|r| r.first())
            .ok_or_else(|| format!("no row from: {sql}"))?;
        cell.parse()
            .map_err(|_| format!("not a number ({cell}) from: {sql}"))
    }

    pub async fn text(&self, sql: &str) -> Res<String> {
        let rows = self.query(sql).await?;
        Ok(rows
            .first()
            .and_then(|r| r.first())
            .cloned()
            .unwrap_or_default())
    }

    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut self.notices.lock().unwrap())
    }
}
