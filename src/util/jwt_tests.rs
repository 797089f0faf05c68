use super::*;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, KeyPair, RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey,
};

const RSA_PKCS8: &str = include_str!("../../tests/fixtures/keys/test_rsa_pkcs8.pem");
const RSA_PKCS1: &str = include_str!("../../tests/fixtures/keys/test_rsa_pkcs1.pem");
const RSA_PUBLIC_PKCS1_DER: &[u8] =
    include_bytes!("../../tests/fixtures/keys/test_rsa_public_pkcs1.der");
const EC_PKCS8: &str = include_str!("../../tests/fixtures/keys/test_ec_p256_pkcs8.pem");

fn parts(jwt: &str) -> (serde_json::Value, serde_json::Value, Vec<u8>, String) {
    let pieces: Vec<&str> = jwt.split('.').collect();
    assert_eq!(pieces.len(), 3, "{jwt}");
    let header = serde_json::from_slice(&base64url_decode(pieces[0]).unwrap()).unwrap();
    let claims = serde_json::from_slice(&base64url_decode(pieces[1]).unwrap()).unwrap();
    let sig = base64url_decode(pieces[2]).unwrap();
    (header, claims, sig, format!("{}.{}", pieces[0], pieces[1]))
}

#[test]
fn rs256_verifies_with_the_public_key_openssl_wrote() {
    for pem in [RSA_PKCS8, RSA_PKCS1] {
        let key = SigningKey::from_pem(pem, Alg::Rs256).unwrap();
        let claims =
            serde_json::json!({"iss": "a@b.iam", "aud": "https://oauth2.test/token", "exp": 2});
        let jwt = key.sign(Some("kid-1"), &claims).unwrap();
        let (header, got_claims, sig, input) = parts(&jwt);
        assert_eq!(
            header,
            serde_json::json!({"alg": "RS256", "typ": "JWT", "kid": "kid-1"})
        );
        assert_eq!(got_claims, claims);
        UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, RSA_PUBLIC_PKCS1_DER)
            .verify(input.as_bytes(), &sig)
            .unwrap();
        // A changed claim no longer verifies: the signature covers the input.
        let forged = format!("{}.{}", input.split('.').next().unwrap(), base64url(b"{}"));
        assert!(
            UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, RSA_PUBLIC_PKCS1_DER)
                .verify(forged.as_bytes(), &sig)
                .is_err()
        );
    }
}

#[test]
fn es256_signature_is_64_bytes_and_verifies() {
    let key = SigningKey::from_pem(EC_PKCS8, Alg::Es256).unwrap();
    let jwt = key
        .sign(None, &serde_json::json!({"sub": "client"}))
        .unwrap();
    let (header, _, sig, input) = parts(&jwt);
    assert_eq!(header, serde_json::json!({"alg": "ES256", "typ": "JWT"}));
    assert_eq!(sig.len(), 64, "JOSE's fixed r||s form, not DER");
    let (_, der) = pem_block(EC_PKCS8).unwrap();
    let pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &SystemRandom::new())
            .unwrap();
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, pair.public_key().as_ref())
        .verify(input.as_bytes(), &sig)
        .unwrap();
}

#[test]
fn bad_keys_are_named_and_never_quoted() {
    let wrong_alg = SigningKey::from_pem(EC_PKCS8, Alg::Rs256).unwrap_err();
    assert!(wrong_alg.contains("RSA"), "{wrong_alg}");
    assert!(
        SigningKey::from_pem("no pem here", Alg::Rs256)
            .unwrap_err()
            .contains("no PEM block")
    );
    let cut = &RSA_PKCS8[..RSA_PKCS8.len() / 2];
    assert!(
        SigningKey::from_pem(cut, Alg::Rs256)
            .unwrap_err()
            .contains("no END line")
    );
    let sec1 = "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n";
    assert!(
        SigningKey::from_pem(sec1, Alg::Es256)
            .unwrap_err()
            .contains("openssl pkcs8")
    );
    let garbage = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
    let err = SigningKey::from_pem(garbage, Alg::Rs256).unwrap_err();
    assert!(!err.contains("AAAA"), "{err}");
    assert_eq!(
        Alg::parse("HS256").unwrap_err(),
        "unsupported signing algorithm \"HS256\" (supported: RS256, ES256)"
    );
}

#[test]
fn base64_both_alphabets_round_trip() {
    let bytes: Vec<u8> = (0..=255).collect();
    assert_eq!(base64_std_decode(&base64_std(&bytes)).unwrap(), bytes);
    assert_eq!(base64url_decode(&base64url(&bytes)).unwrap(), bytes);
    assert_eq!(base64_std(b"user:pass"), "dXNlcjpwYXNz");
    assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
    assert!(base64_std_decode("***").is_err());
}
