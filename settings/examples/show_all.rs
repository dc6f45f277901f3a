//! Prints `SHOW ALL` of a fresh superuser session (`name | setting | description`), for
//! comparing with `SHOW ALL` on a PostgreSQL 18 reference server.
fn main() {
    let mut session =
        iolab_settings::SessionSettings::new(&iolab_settings::ServerSettings::defaults());
    session.set_session_user("postgres", true);
    for (name, setting, description) in session.show_all() {
        println!("{name}|{setting}|{description}");
    }
}
