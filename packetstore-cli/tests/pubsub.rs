//! Pub/Sub as Redis 7.0 serves it: SUBSCRIBE, PSUBSCRIBE, the sharded
//! forms, PUBLISH's receiver count, PUBSUB's introspection, RESP2's
//! subscriber context and RESP3's push messages; a subscriber that stops
//! reading is disconnected once its mailbox passes its bound, and never
//! slows its publisher.
//!
//! Method: raw RESP connections (exact frames, in order) and the redis
//! crate's pub/sub client, against `packetstore serve`.

mod common;

use std::time::{Duration, Instant};

use common::{Raw, Server, TempPool};

/// One shard and two (with two, the clients land on either shard; a
/// shard channel's subscription stays where its client is and SPUBLISH
/// reaches every shard's).
#[test]
fn messages_reach_channel_and_pattern_subscribers_in_order() {
    for shards in ["1", "2"] {
        for _ in 0..3 {
            messages_reach_subscribers_on(shards);
        }
    }
}

fn messages_reach_subscribers_on(shards: &str) {
    let pool = TempPool::new("pubsub");
    let server = Server::start(&pool.0, &["--shards", shards]);
    let mut alice = Raw::connect(&server);
    let mut bob = Raw::connect(&server);
    let mut publisher = Raw::connect(&server);
    alice.send(&[b"SUBSCRIBE", b"news", b"sport"]).unwrap();
    assert_eq!(alice.read().unwrap(), "*3 [$9, $4, :1]");
    assert_eq!(alice.read().unwrap(), "*3 [$9, $5, :2]");
    assert_eq!(bob.call(&[b"PSUBSCRIBE", b"n*"]).unwrap(), "*3 [$10, $2, :1]");
    // In RESP2 a subscriber runs only the subscription commands and PING.
    assert_eq!(
        alice.call(&[b"GET", b"x"]).unwrap(),
        "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    );
    assert_eq!(alice.call(&[b"PING"]).unwrap(), "*2 [$4, $0]");
    assert_eq!(publisher.call(&[b"PUBLISH", b"news", b"hello"]).unwrap(), ":2");
    assert_eq!(publisher.call(&[b"PUBLISH", b"sport", b"goal"]).unwrap(), ":1");
    assert_eq!(publisher.call(&[b"PUBLISH", b"weather", b"rain"]).unwrap(), ":0");
    assert_eq!(alice.read().unwrap(), "*3 [$7, $4, $5]");
    assert_eq!(alice.read().unwrap(), "*3 [$7, $5, $4]");
    assert_eq!(bob.read().unwrap(), "*4 [$8, $2, $4, $5]");
    // Introspection.
    assert_eq!(publisher.call(&[b"PUBSUB", b"NUMSUB", b"news", b"none"]).unwrap(), "*4 [$4, :1, $4, :0]");
    assert_eq!(publisher.call(&[b"PUBSUB", b"NUMPAT"]).unwrap(), ":1");
    // The same pattern by a client of the other shard (ids name their
    // shard: shard i's are i+1, i+1+shards, ...) is still one pattern, as
    // Redis counts unique patterns. (Counted twice before: each shard's.)
    let id_of = |raw: &mut Raw| raw.call(&[b"CLIENT", b"ID"]).unwrap().trim_start_matches(':').parse::<u64>().unwrap();
    let mut carol = Raw::connect(&server);
    if shards == "2" {
        let mut tries = 0;
        let mut dave = Raw::connect(&server);
        while id_of(&mut carol) % 2 == id_of(&mut dave) % 2 {
            tries += 1;
            assert!(tries < 100, "every connection landed on one shard");
            carol = Raw::connect(&server);
        }
        assert_eq!(dave.call(&[b"PSUBSCRIBE", b"n*"]).unwrap(), "*3 [$10, $2, :1]");
        assert_eq!(carol.call(&[b"PSUBSCRIBE", b"n*"]).unwrap(), "*3 [$10, $2, :1]");
        assert_eq!(publisher.call(&[b"PUBSUB", b"NUMPAT"]).unwrap(), ":1", "one pattern, on both shards");
        // Gone before the PUBLISHes below count receivers.
        for raw in [&mut dave, &mut carol] {
            assert_eq!(raw.call(&[b"PUNSUBSCRIBE"]).unwrap(), "*3 [$12, $2, :0]");
        }
    }
    assert_eq!(publisher.call(&[b"PUBSUB", b"CHANNELS", b"s*"]).unwrap(), "*1 [$5]");
    // Unsubscribing from everything, then nothing is left to unsubscribe.
    alice.send(&[b"UNSUBSCRIBE"]).unwrap();
    let counts = [alice.read().unwrap(), alice.read().unwrap()];
    assert!(counts[0].ends_with(":1]") && counts[1].ends_with(":0]"), "{counts:?}");
    assert_eq!(alice.call(&[b"UNSUBSCRIBE"]).unwrap(), "*3 [$11, $-1, :0]");
    assert_eq!(alice.call(&[b"GET", b"x"]).unwrap(), "$-1");
    assert_eq!(publisher.call(&[b"PUBLISH", b"news", b"again"]).unwrap(), ":1");
    assert_eq!(bob.read().unwrap(), "*4 [$8, $2, $4, $5]");
    // Shard channels are their own namespace.
    assert_eq!(alice.call(&[b"SSUBSCRIBE", b"news"]).unwrap(), "*3 [$10, $4, :1]");
    assert_eq!(publisher.call(&[b"SPUBLISH", b"news", b"s"]).unwrap(), ":1");
    assert_eq!(alice.read().unwrap(), "*3 [$8, $4, $1]");
    // A subscriber that goes leaves its channels.
    drop(bob);
    let deadline = Instant::now() + Duration::from_secs(5);
    while publisher.call(&[b"PUBSUB", b"NUMPAT"]).unwrap() != ":0" {
        assert!(Instant::now() < deadline, "the closed subscriber's pattern is still counted");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// With one shard and two: with two, PUBLISH runs on every shard and the
/// publisher's own copy (its part on its shard came through a link) was
/// lost; clients are spread over both shards.
#[test]
fn resp3_subscribers_get_pushes_and_run_any_command() {
    for shards in ["1", "2"] {
        let pool = TempPool::new("pubsub-resp3");
        let server = Server::start(&pool.0, &["--shards", shards]);
        for _ in 0..4 {
            let mut client = Raw::connect(&server);
            assert!(client.call(&[b"HELLO", b"3"]).unwrap().starts_with('%'));
            assert_eq!(client.call(&[b"SUBSCRIBE", b"ch"]).unwrap(), ">3 [$9, $2, :1]");
            assert_eq!(client.call(&[b"SET", b"k", b"v"]).unwrap(), "+OK");
            // Its own publication arrives before PUBLISH's reply, as in Redis.
            client.send(&[b"PUBLISH", b"ch", b"me"]).unwrap();
            assert_eq!(client.read().unwrap(), ">3 [$7, $2, $2]", "{shards} shard(s)");
            assert_eq!(client.read().unwrap(), ":1");
            // Gone before the next one counts the subscribers (its close
            // is served when its shard next runs: CI once counted it).
            drop(client);
            let mut observer = Raw::connect(&server);
            let deadline = Instant::now() + Duration::from_secs(5);
            while observer.call(&[b"PUBSUB", b"NUMSUB", b"ch"]).unwrap() != "*2 [$2, :0]" {
                assert!(Instant::now() < deadline, "a closed subscriber is still counted");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

#[test]
fn the_redis_crate_subscribes() {
    let pool = TempPool::new("pubsub-crate");
    let server = Server::start(&pool.0, &[]);
    let mut subscriber = server.client();
    let mut pubsub = subscriber.as_pubsub();
    pubsub.subscribe("orders").unwrap();
    pubsub.psubscribe("order*").unwrap();
    pubsub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut publisher = server.client();
    let receivers: i64 = redis::cmd("PUBLISH").arg("orders").arg("42").query(&mut publisher).unwrap();
    assert_eq!(receivers, 2);
    let mut got = Vec::new();
    for _ in 0..2 {
        let message = pubsub.get_message().unwrap();
        got.push((message.get_channel_name().to_string(), message.get_payload::<String>().unwrap()));
    }
    assert_eq!(got, vec![("orders".to_string(), "42".to_string()), ("orders".to_string(), "42".to_string())]);
}

#[test]
fn a_subscriber_that_never_reads_is_cut_off_and_never_slows_publishers() {
    let pool = TempPool::new("pubsub-slow");
    let server = Server::start(&pool.0, &[]);
    let mut sleeper = Raw::connect(&server);
    assert_eq!(sleeper.call(&[b"SUBSCRIBE", b"firehose"]).unwrap(), "*3 [$9, $8, :1]");
    // 64 MiB of messages for a subscriber that reads none of them: twice
    // its mailbox's bound, on top of what the kernel's socket buffers take.
    let mut publisher = server.client();
    let message = vec![b'x'; 64 * 1024];
    let started = Instant::now();
    let mut delivered_to = Vec::new();
    for _ in 0..1024 {
        let receivers: i64 = redis::cmd("PUBLISH").arg("firehose").arg(&message).query(&mut publisher).unwrap();
        delivered_to.push(receivers);
    }
    let elapsed = started.elapsed();
    // The publisher was never held up (a generous bound: about 1 ms per
    // message would mean it waited on the subscriber).
    assert!(elapsed < Duration::from_secs(30), "1,024 publishes took {elapsed:?}");
    assert_eq!(delivered_to[0], 1);
    // The subscriber was cut off: it has left the channel.
    assert_eq!(redis::cmd("PUBSUB").arg("NUMSUB").arg("firehose").query::<(String, i64)>(&mut publisher).unwrap().1, 0);
    assert_eq!(*delivered_to.last().unwrap(), 0, "still counted as a receiver at the end");
}
