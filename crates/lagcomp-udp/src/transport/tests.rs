//! The server's netcode transport against real netcode clients on loopback.

use super::*;
use crate::channel::{PROTOCOL_ID, UNRELIABLE, WELCOME, connection_config, unsecure_token};
use renetcode::{ClientAuthentication, NetcodeClient, ServerAuthentication};

const NOW: Duration = Duration::from_secs(1_800_000_000);

/// An unsecure netcode server behind a gate, with renet, as the transport has them.
struct Receiver {
    gate: Gate,
    netcode: NetcodeServer,
    renet: RenetServer,
    /// What the server sent, as sent.
    sent: Vec<(SocketAddr, Vec<u8>)>,
}

impl Receiver {
    fn new() -> Self {
        let server = "127.0.0.1:5000".parse().expect("an address");
        Self {
            gate: Gate::new(true, NOW.as_secs_f64()),
            netcode: NetcodeServer::new(ServerConfig {
                current_time: NOW,
                max_clients: 8,
                protocol_id: PROTOCOL_ID,
                public_addresses: vec![server],
                authentication: ServerAuthentication::Unsecure,
            }),
            renet: RenetServer::new(connection_config()),
            sent: Vec::new(),
        }
    }

    fn datagram(&mut self, from: SocketAddr, bytes: &[u8]) -> Option<ClientId> {
        let mut bytes = bytes.to_vec();
        let sent = &mut self.sent;
        self.gate.process(
            &mut self.netcode,
            &mut self.renet,
            from,
            &mut bytes,
            &mut |payload, addr| sent.push((addr, payload.to_vec())),
        )
    }

    /// A client from `from` through the handshake, as `lagcomp bots` makes them.
    fn connect(&mut self, from: SocketAddr, id: u64) -> NetcodeClient {
        let server = "127.0.0.1:5000".parse().expect("an address");
        let token = unsecure_token(id, server, NOW).expect("a token");
        let mut client = NetcodeClient::new(
            NOW,
            ClientAuthentication::Secure {
                connect_token: token,
            },
        )
        .expect("a client");
        for _ in 0..8 {
            if let Some((packet, _)) = client.update(Duration::from_millis(300)) {
                let packet = packet.to_vec();
                self.datagram(from, &packet);
            }
            for (_, mut answer) in self.sent.drain(..) {
                client.process_packet(&mut answer);
            }
        }
        assert!(client.is_connected());
        client
    }
}

#[test]
fn the_datagram_that_panics_renetcode_is_dropped_by_framing_before_netcode() {
    let mut receiver = Receiver::new();
    let player = "127.0.0.1:6000".parse().expect("an address");
    let mut client = receiver.connect(player, 1);
    // A request only, answered with a challenge: netcode now knows this address.
    let half_open: SocketAddr = "127.0.0.1:6001".parse().expect("an address");
    let server = "127.0.0.1:5000".parse().expect("an address");
    let mut other = NetcodeClient::new(
        NOW,
        ClientAuthentication::Secure {
            connect_token: unsecure_token(2, server, NOW).expect("a token"),
        },
    )
    .expect("a client");
    let (request, _) = other.update(Duration::ZERO).expect("a request");
    let request = request.to_vec();
    receiver.datagram(half_open, &request);
    assert_eq!(receiver.sent.len(), 1, "challenged");
    let attack: Vec<u8> = std::iter::once(0x95).chain([0x41; 20]).collect();
    // A payload numbered 2^64 - 1: renetcode's replay check adds 256 to it (a panic
    // where overflow is checked, as in this test build).
    let overflow: Vec<u8> = [&[0x85][..], &[0xff; 8], &[0x41; 17]].concat();
    for from in [player, half_open] {
        assert_eq!(receiver.datagram(from, &attack), None);
        assert_eq!(receiver.datagram(from, &overflow), None);
    }
    assert_eq!(
        receiver.gate.refused(),
        Refused {
            framing: 4,
            requests: 0,
            panics: 0
        }
    );
    // The player plays on: its next payload reaches renet.
    let (_, payload) = client.generate_payload_packet(&[7; 40]).expect("a payload");
    let payload = payload.to_vec();
    assert_eq!(receiver.datagram(player, &payload), Some(1));
}

#[test]
fn a_panic_inside_netcode_is_contained_counted_and_its_client_disconnected() {
    let mut receiver = Receiver::new();
    let player = "127.0.0.1:6000".parse().expect("an address");
    let mut client = receiver.connect(player, 1);
    assert!(receiver.netcode.is_client_connected(1));
    receiver.renet.add_connection(1);
    while receiver.renet.get_event().is_some() {}
    receiver.gate.fault = Some(PacketKind::Payload);
    let (_, payload) = client.generate_payload_packet(&[7; 40]).expect("a payload");
    let payload = payload.to_vec();
    assert_eq!(receiver.datagram(player, &payload), None);
    assert_eq!(receiver.gate.refused().panics, 1);
    // Disconnected from netcode and renet, and told so.
    assert!(!receiver.netcode.is_client_connected(1));
    assert!(matches!(
        receiver.renet.get_event(),
        Some(renet::ServerEvent::ClientDisconnected { client_id: 1, .. })
    ));
    assert_eq!(receiver.sent.last().map(|(to, _)| *to), Some(player));
    // Anyone else is served as before.
    receiver.gate.fault = None;
    receiver.connect("127.0.0.1:6002".parse().expect("an address"), 3);
}

#[test]
fn connection_requests_over_the_rate_or_with_long_tokens_never_reach_netcode() {
    let mut receiver = Receiver::new();
    let server = "127.0.0.1:5000".parse().expect("an address");
    // renet's own unsecure client: a 300 s token.
    let mut long = NetcodeClient::new(
        NOW,
        ClientAuthentication::Unsecure {
            protocol_id: PROTOCOL_ID,
            client_id: 5,
            server_addr: server,
            user_data: None,
        },
    )
    .expect("a client");
    let (request, _) = long.update(Duration::ZERO).expect("a request");
    let request = request.to_vec();
    receiver.datagram("127.0.0.1:7000".parse().expect("an address"), &request);
    assert!(receiver.sent.is_empty(), "not challenged");
    assert_eq!(receiver.gate.refused().requests, 1);
    // One host, many ports, at once: a burst gets through, the rest not.
    let mut short = NetcodeClient::new(
        NOW,
        ClientAuthentication::Secure {
            connect_token: unsecure_token(6, server, NOW).expect("a token"),
        },
    )
    .expect("a client");
    let (request, _) = short.update(Duration::ZERO).expect("a request");
    let request = request.to_vec();
    for port in 0..200 {
        receiver.datagram(SocketAddr::from(([127, 0, 0, 2], 10_000 + port)), &request);
    }
    let challenged = receiver.sent.len();
    assert!((1..=16).contains(&challenged), "{challenged}");
    assert_eq!(receiver.gate.refused().requests, 1 + 200 - 16);
}

#[test]
fn renet_acknowledgements_are_told_from_everything_else() {
    let mut server = RenetServer::new(connection_config());
    let mut client = server.new_local_client(7);
    // Nothing received yet: nothing to acknowledge, nothing to send.
    assert!(server.get_packets_to_send(7).expect("connected").is_empty());
    // The client sends an input: the server owes it an acknowledgement, alone.
    client.send_message(UNRELIABLE, vec![1_u8; 40]);
    for packet in client.get_packets_to_send() {
        assert!(!is_ack(&packet), "a client's message is not an ack");
        server.process_packet_from(&packet, 7).expect("connected");
    }
    let packets = server.get_packets_to_send(7).expect("connected");
    assert_eq!(packets.len(), 1);
    assert!(
        is_ack(&packets[0]),
        "renet's ack packet starts with {RENET_ACK}"
    );
    // With messages on both kinds of channel: only the last packet is the ack.
    server.send_message(7, UNRELIABLE, vec![2_u8; 1000]);
    server.send_message(7, WELCOME, vec![3_u8; 10]);
    client.send_message(UNRELIABLE, vec![1_u8; 40]);
    for packet in client.get_packets_to_send() {
        server.process_packet_from(&packet, 7).expect("connected");
    }
    let packets = server.get_packets_to_send(7).expect("connected");
    let acks: Vec<bool> = packets.iter().map(|p| is_ack(p)).collect();
    assert_eq!(acks, [false, false, true]);
    // The messages travel in the others: the unreliable one and the reliable one.
    assert!(packets[0].len() > 1000 && packets[1].len() > 10);
    assert!(packets[2].len() < 40, "an ack is a few bytes");
}

#[test]
fn a_batch_arrives_whole_and_in_order_over_several_system_calls() {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("a socket");
    let receivers: Vec<UdpSocket> = (0..2)
        .map(|_| UdpSocket::bind("127.0.0.1:0").expect("a socket"))
        .collect();
    let mut batch = Batch::default();
    let count = 2 * SEND_BATCH + 7;
    for i in 0..count {
        let to = receivers[i % 2].local_addr().expect("bound");
        // Lengths differ, so a datagram cut at another's length would show.
        batch.push(&vec![i as u8; 1 + i * 3], to);
    }
    send_batch(&socket, &batch);
    let mut buffer = [0_u8; 2048];
    for (r, receiver) in receivers.iter().enumerate() {
        receiver
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("a timeout");
        for i in (r..count).step_by(2) {
            let (len, from) = receiver.recv_from(&mut buffer).expect("every datagram");
            assert_eq!(from, socket.local_addr().expect("bound"));
            assert_eq!(
                &buffer[..len],
                &vec![i as u8; 1 + i * 3][..],
                "datagram {i}"
            );
        }
    }
}

#[test]
fn renet_never_sends_what_starts_a_datagram_of_records_and_refuses_it() {
    use lagcomp_wire::datagram::{DATAGRAM_TAG, is_datagram};
    let mut server = RenetServer::new(connection_config());
    let mut client = server.new_local_client(7);
    // Every kind of packet renet sends: messages small and sliced, reliable and not,
    // acknowledgements.
    client.send_message(UNRELIABLE, vec![1_u8; 40]);
    for packet in client.get_packets_to_send() {
        assert!(!is_datagram(&packet));
        server.process_packet_from(&packet, 7).expect("connected");
    }
    server.send_message(7, UNRELIABLE, vec![2_u8; 100]);
    server.send_message(7, UNRELIABLE, vec![2_u8; 5000]);
    server.send_message(7, WELCOME, vec![3_u8; 10]);
    server.send_message(7, WELCOME, vec![3_u8; 5000]);
    let packets = server.get_packets_to_send(7).expect("connected");
    assert!(packets.len() > 8, "sliced messages: {}", packets.len());
    assert!(packets.iter().any(|p| is_ack(p)));
    // A client as `lagcomp bots` makes one reads them all.
    let mut receiver = renet::RenetClient::new(connection_config());
    receiver.set_connected();
    for packet in &packets {
        assert!(!is_datagram(packet), "renet packet type {}", packet[0]);
        receiver.process_packet(packet);
    }
    assert!(
        receiver.disconnect_reason().is_none(),
        "{:?}",
        receiver.disconnect_reason()
    );
    assert_eq!(receiver.receive_message(WELCOME).map(|m| m.len()), Some(10));
    // Handed a datagram of records, renet fails to read it and disconnects: why a
    // client of `lagcomp serve` must take them apart first (`crate::client`).
    receiver.process_packet(&[DATAGRAM_TAG, 0, 1, 0, 9]);
    let reason = receiver
        .disconnect_reason()
        .expect("disconnected")
        .to_string();
    assert!(reason.contains("invalid packet type"), "{reason}");
}
