//! Finding a server that runs on this machine but was not started by us: the process listening
//! on a loopback URI's port (from /proc) and the data directory it reports. Blocking reads of
//! /proc: call them off the async runtime.

use std::path::PathBuf;

use mongodb::bson::doc;

/// The port of a URI's single host when that host is this machine (loopback).
pub(crate) async fn local_port(uri: &str) -> Option<u16> {
    let hosts = mongodb::options::ClientOptions::parse(uri)
        .await
        .ok()?
        .hosts;
    match hosts.as_slice() {
        [mongodb::options::ServerAddress::Tcp { host, port }]
            if host == "localhost" || host == "::1" || host.starts_with("127.") =>
        {
            Some(port.unwrap_or(27017))
        }
        _ => None,
    }
}

/// The local process listening on TCP `port` (IPv4 or IPv6), from /proc; None when not found or
/// not visible to this user.
pub(crate) fn pid_listening_on(port: u16) -> Option<u32> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for l in text.lines().skip(1) {
            let f: Vec<&str> = l.split_whitespace().collect();
            // local_address is HEX_IP:HEX_PORT; state 0A is LISTEN.
            let listening = f.get(3) == Some(&"0A");
            let local_port = f
                .get(1)
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if listening && local_port == Some(port) {
                inodes.extend(f.get(9).map(|i| format!("socket:[{i}]")));
            }
        }
    }
    if inodes.is_empty() {
        return None;
    }
    for proc_dir in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = proc_dir.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(proc_dir.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(link) = std::fs::read_link(fd.path()) {
                if inodes.iter().any(|i| link.as_os_str() == i.as_str()) {
                    return Some(pid);
                }
            }
        }
    }
    None
}

/// The data directory a local server reports (`getCmdLineOpts`), resolved against its cwd.
pub(crate) async fn data_dir_of(client: &mongodb::Client, pid: Option<u32>) -> Option<PathBuf> {
    let opts = client
        .database("admin")
        .run_command(doc! { "getCmdLineOpts": 1 })
        .await
        .ok()?;
    let path = opts
        .get_document("parsed")
        .ok()?
        .get_document("storage")
        .ok()?
        .get_str("dbPath")
        .ok()?;
    let path = PathBuf::from(path);
    if path.is_absolute() {
        Some(path)
    } else {
        let pid = pid?;
        let cwd =
            tokio::task::spawn_blocking(move || std::fs::read_link(format!("/proc/{pid}/cwd")))
                .await
                .ok()?
                .ok()?;
        Some(cwd.join(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listener_of_a_port_is_found_in_proc() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert_eq!(pid_listening_on(port), Some(std::process::id()));
        drop(l);
        assert_eq!(pid_listening_on(port), None);
    }
}
