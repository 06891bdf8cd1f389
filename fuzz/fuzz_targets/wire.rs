//! What a remote client can send before and during a session: the hello,
//! a welcome (what a client reads), and control-frame bodies. None may
//! panic, and a hello may never ask for more than its limits allow.
#![no_main]

use libfuzzer_sys::fuzz_target;
use xferbench::transport::ReplyShape;
use xferbench::transport::remote::{self, Hello};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = Hello::read(&mut &data[..]) {
        assert!(h.token.len() <= remote::MAX_TOKEN);
        // What parsed encodes back to the bytes it came from, flags too.
        let back = h.encode();
        let n = remote::HELLO_LEN + h.token.len();
        assert_eq!(&back[..24], &data[..24]);
        assert_eq!(&back[24..], &data[24..n]);
    }
    if let Ok(w) =
        <&[u8; remote::WELCOME_LEN]>::try_from(data.get(..remote::WELCOME_LEN).unwrap_or(&[]))
    {
        let _ = remote::parse_welcome(w);
    }
    if let Some(b) = data.get(..ReplyShape::WIRE_LEN) {
        let b: &[u8; ReplyShape::WIRE_LEN] = b.try_into().expect("length checked");
        if let Some(s) = ReplyShape::decode(b) {
            assert_eq!(ReplyShape::decode(&s.encode()), Some(s));
        }
    }
});
