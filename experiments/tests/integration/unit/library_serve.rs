//! The unit tests of `arbor_experiments::library::serve` (src/library/serve.rs).

use arbor_experiments::library::serve::decoded;

#[test]
fn a_query_component_is_decoded() {
    assert_eq!(decoded("What+is%20a%22lease%22%3F").unwrap(), "What is a\"lease\"?");
    assert_eq!(decoded("caf%C3%A9").unwrap(), "café");
    assert!(decoded("%4").is_err() && decoded("%zz").is_err() && decoded("%FF").is_err());
}
