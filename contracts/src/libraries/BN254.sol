// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title BN254
/// @notice The curve arithmetic a BLS signature check needs on alt_bn128 (BN254), through the
///         pairing precompile of EIP-197 (0x08, repriced by EIP-1108) and modexp of EIP-198 (0x05,
///         for square roots). Signatures are aggregated off chain, so no ecAdd/ecMul is needed here.
/// @dev Conventions, shared with `trust.core.beacon.bls` (py_ecc) bit for bit:
///      - G1 is y^2 = x^3 + 3 over F_p; a point is (x, y) with x, y < p; (0, 0) is the point at
///        infinity, as for the precompiles. G1 has prime order (cofactor 1), so every point on the
///        curve is in the group.
///      - G2 points are encoded as EIP-197 expects: each F_p^2 coordinate a*i + b as [a, b]
///        (imaginary part first). py_ecc's FQ2 stores (b, a).
///      - `hashToG1` is try-and-increment: for counter c = 0, 1, ... it derives a 512-bit integer
///        from keccak256(seed || c || 0) and keccak256(seed || c || 1), reduces it mod p (bias below
///        2^-250, unlike a 256-bit value mod p), and takes the first x with x^3 + 3 a square; the
///        square root's sign comes from the top bit of the first hash, independent of x up to 2^-250.
///        The seed is keccak256(dst || message), `dst` separating this use from every other hash of
///        the same message. Not constant time, which is fine: messages are public. About half of all
///        x qualify, so the expected number of tries is 2 and the chance of 256 failures 2^-256.
library BN254 {
    /// @notice The base field modulus p (p = 3 mod 4, so sqrt(a) = a^((p+1)/4) when a is a square).
    uint256 internal constant P = 21888242871839275222246405745257275088696311157297823662689037894645226208583;
    /// @notice The order of G1 and G2 (the scalar field of keys and Shamir shares).
    uint256 internal constant N = 21888242871839275222246405745257275088548364400416034343698204186575808495617;

    /// @dev 2^256 mod p: folds the high 256 bits of a 512-bit hash into the field.
    uint256 private constant _TWO_256_MOD_P =
        6350874878119819312338956282401532409788428879151445726012394534686998597021;
    /// @dev (p + 1) / 4.
    uint256 private constant _SQRT_EXPONENT =
        5472060717959818805561601436314318772174077789324455915672259473661306552146;
    uint256 private constant _CURVE_B = 3;
    uint256 private constant _MAX_TRIES = 256;

    /// @dev The generator of G2, EIP-197 encoding.
    uint256 private constant _G2_X_IM = 11559732032986387107991004021392285783925812861821192530917403151452391805634;
    uint256 private constant _G2_X_RE = 10857046999023057135944570762232829481370756359578518086990519993285655852781;
    uint256 private constant _G2_Y_IM = 4082367875863433681332203403145435568316851327593401208105741076214120093531;
    uint256 private constant _G2_Y_RE = 8495653923123431417604973247489272438418190587263600148770280649306958101930;

    address private constant _MODEXP = address(0x05);
    address private constant _PAIRING = address(0x08);
    /// @dev The gas a two-pair pairing costs (EIP-1108: 45,000 + 2 * 34,000) with room to spare. A
    ///      precompile that fails (a point off its curve) consumes all the gas it was given: capped,
    ///      a bad key costs this much, not the whole transaction.
    uint256 private constant _PAIRING_GAS = 150_000;

    struct G1Point {
        uint256 x;
        uint256 y;
    }

    /// @dev x = x[0] * i + x[1], y likewise (EIP-197 order).
    struct G2Point {
        uint256[2] x;
        uint256[2] y;
    }

    /// @notice No counter below 256 gave a point (probability 2^-256).
    error BN254HashToCurveFailed(bytes32 seed);
    /// @notice A precompile failed (out of gas).
    error BN254PrecompileFailed(address precompile);

    /// @notice The generator of G1, (1, 2).
    function g1() internal pure returns (G1Point memory) {
        return G1Point(1, 2);
    }

    /// @notice The generator of G2.
    function g2() internal pure returns (G2Point memory) {
        return G2Point([_G2_X_IM, _G2_X_RE], [_G2_Y_IM, _G2_Y_RE]);
    }

    /// @notice Whether `point` is a finite point of G1: coordinates below p and y^2 = x^3 + 3.
    /// @dev The point at infinity (0, 0) is not: no signature or message point is infinity.
    function isOnCurve(G1Point memory point) internal pure returns (bool) {
        if (point.x >= P || point.y >= P) return false;
        if (point.x == 0 && point.y == 0) return false;
        return mulmod(point.y, point.y, P) == _rhs(point.x);
    }

    /// @notice -point (the point at infinity stays itself).
    function negate(G1Point memory point) internal pure returns (G1Point memory) {
        if (point.x == 0 && point.y == 0) return point;
        return G1Point(point.x, P - (point.y % P));
    }

    /// @notice The square root a^((p+1)/4) of `a` in F_p (either sign; the caller picks), and whether
    ///         `a` is a square at all.
    /// @param a A field element (below p).
    /// @return root a^((p+1)/4) mod p; a square root of `a` exactly when `exists`.
    /// @return exists Whether `a` is a quadratic residue (or zero).
    function sqrt(uint256 a) internal view returns (uint256 root, bool exists) {
        (bool ok, bytes memory out) =
            _MODEXP.staticcall(abi.encode(uint256(32), uint256(32), uint256(32), a, _SQRT_EXPONENT, P));
        if (!ok || out.length != 32) revert BN254PrecompileFailed(_MODEXP);
        root = abi.decode(out, (uint256));
        exists = mulmod(root, root, P) == a;
    }

    /// @notice Hashes `message` to a point of G1 (try-and-increment, see the library's notes).
    /// @dev Cost: two keccak256 and one modexp (about 1,400 gas under EIP-2565) per try, two tries
    ///      expected.
    /// @param dst The domain separation tag of the caller.
    /// @param message The bytes to hash.
    /// @return point A point of G1 (never infinity).
    function hashToG1(bytes memory dst, bytes memory message) internal view returns (G1Point memory point) {
        bytes32 seed = keccak256(abi.encodePacked(dst, message));
        for (uint256 counter = 0; counter < _MAX_TRIES; ++counter) {
            uint256 high = uint256(keccak256(abi.encodePacked(seed, uint8(counter), uint8(0))));
            uint256 low = uint256(keccak256(abi.encodePacked(seed, uint8(counter), uint8(1))));
            // (high * 2^256 + low) mod p, the 512-bit value reduced without a 512-bit type.
            uint256 x = addmod(mulmod(high, _TWO_256_MOD_P, P), low, P);
            uint256 rhs = _rhs(x);
            (uint256 y, bool exists) = sqrt(rhs);
            if (!exists) continue;
            // rhs is never 0: x^3 = -3 would give a point of order 2, and G1's order is prime.
            if ((y & 1) != (high >> 255)) y = P - y;
            return G1Point(x, y);
        }
        revert BN254HashToCurveFailed(seed);
    }

    /// @notice Whether e(signature, g2) == e(messagePoint, publicKey): the BLS check of `signature`
    ///         on the message hashed to `messagePoint`, under `publicKey`.
    /// @dev One pairing precompile call with two pairs: 45,000 + 2 * 34,000 gas (EIP-1108). The
    ///      precompile itself rejects a G2 key off the twist or outside the subgroup (`ok` false);
    ///      the caller checks that `signature` is on the curve first. Checked as
    ///      e(-signature, g2) * e(messagePoint, publicKey) == 1.
    /// @return valid True when the signature verifies.
    function verify(G2Point memory publicKey, G1Point memory messagePoint, G1Point memory signature)
        internal
        view
        returns (bool valid)
    {
        G1Point memory negated = negate(signature);
        uint256[12] memory input = [
            negated.x,
            negated.y,
            _G2_X_IM,
            _G2_X_RE,
            _G2_Y_IM,
            _G2_Y_RE,
            messagePoint.x,
            messagePoint.y,
            publicKey.x[0],
            publicKey.x[1],
            publicKey.y[0],
            publicKey.y[1]
        ];
        return _pairingIsOne(input);
    }

    /// @notice Whether `point` is a point of G2 other than infinity, as the pairing precompile sees
    ///         it (on the twist and in the subgroup of order N).
    /// @dev e(g1, point) * e(-g1, point) == 1 for every valid point; the precompile fails on the
    ///      others. About 113,000 gas: for constructors.
    function isValidG2(G2Point memory point) internal view returns (bool) {
        if (point.x[0] == 0 && point.x[1] == 0 && point.y[0] == 0 && point.y[1] == 0) return false;
        uint256[12] memory input = [
            uint256(1),
            2,
            point.x[0],
            point.x[1],
            point.y[0],
            point.y[1],
            1,
            P - 2,
            point.x[0],
            point.x[1],
            point.y[0],
            point.y[1]
        ];
        return _pairingIsOne(input);
    }

    /// @dev Whether the pairing precompile accepts two pairs (a point off its curve or group makes
    ///      the call fail) and finds their product to be one. A fixed array encodes as its 12 words.
    function _pairingIsOne(uint256[12] memory input) private view returns (bool) {
        (bool ok, bytes memory out) = _PAIRING.staticcall{gas: _PAIRING_GAS}(abi.encode(input));
        return ok && out.length == 32 && abi.decode(out, (uint256)) == 1;
    }

    /// @dev x^3 + 3 mod p.
    function _rhs(uint256 x) private pure returns (uint256) {
        return addmod(mulmod(mulmod(x, x, P), x, P), _CURVE_B, P);
    }
}
