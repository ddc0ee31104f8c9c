// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";
import {stdError} from "forge-std/StdError.sol";

import {ReputationLib} from "../../src/libraries/ReputationLib.sol";

/// @notice Exposes the library's internal functions as external calls (so that reverts can be
///         expected).
contract ReputationLibHarness {
    function update(uint64 reputationWad, uint64 gammaWad, bool correct) external pure returns (uint64) {
        return ReputationLib.update(reputationWad, gammaWad, correct);
    }

    function slashProbabilityBps(uint64 reputationWad, uint16 pMinBps, uint16 pMaxBps) external pure returns (uint256) {
        return ReputationLib.slashProbabilityBps(reputationWad, pMinBps, pMaxBps);
    }
}

contract ReputationLibTest is Test {
    uint64 internal constant WAD = 1e18;
    uint16 internal constant BPS = 10_000;

    ReputationLibHarness internal lib;

    function setUp() public {
        lib = new ReputationLibHarness();
    }

    /// @dev Bounds (p_min, p_max) to the range ParamsLib accepts: 0 < p_min < p_max <= 1.
    function boundProbabilities(uint16 pMin, uint16 pMax) internal pure returns (uint16, uint16) {
        uint16 lo = uint16(bound(pMin, 1, BPS - 1));
        uint16 hi = uint16(bound(pMax, lo + 1, BPS));
        return (lo, hi);
    }

    // ------------------------------------------------------------------ update (eq. 3.8)

    function test_update_paperDefaultGamma() public view {
        assertEq(lib.update(0.5e18, 0.1e18, true), 0.55e18);
        assertEq(lib.update(0.5e18, 0.1e18, false), 0.45e18);
    }

    function test_update_fullReputationStaysFullWhenCorrect() public view {
        assertEq(lib.update(WAD, 0.1e18, true), WAD);
        assertEq(lib.update(WAD, 1, true), WAD);
    }

    function test_update_zeroReputationStaysZeroWhenWrong() public view {
        assertEq(lib.update(0, 0.1e18, false), 0);
    }

    function test_update_gammaOneForgetsThePast() public view {
        assertEq(lib.update(0.3e18, WAD, true), WAD);
        assertEq(lib.update(0.3e18, WAD, false), 0);
    }

    function test_update_roundsDown() public view {
        // 1 * (1 - 0.1) = 0.9 wei: floored to 0.
        assertEq(lib.update(1, 0.1e18, false), 0);
        // 7 * 0.9 = 6.3 -> 6, then + gamma.
        assertEq(lib.update(7, 0.1e18, true), 6 + 0.1e18);
    }

    function test_update_revertsWhenGammaAboveOne() public {
        vm.expectRevert(stdError.arithmeticError);
        lib.update(0.5e18, WAD + 1, true);
    }

    function testFuzz_update_matchesFormula(uint64 reputation, uint64 gamma, bool correct) public view {
        reputation = uint64(bound(reputation, 0, WAD));
        gamma = uint64(bound(gamma, 1, WAD));
        uint256 expected = uint256(reputation) * (WAD - gamma) / WAD + (correct ? gamma : 0);
        uint64 next = lib.update(reputation, gamma, correct);
        assertEq(next, expected);
        assertLe(next, WAD, "reputation never exceeds 1");
    }

    function testFuzz_update_movesTowardTheIndicator(uint64 reputation, uint64 gamma) public view {
        reputation = uint64(bound(reputation, 0, WAD));
        gamma = uint64(bound(gamma, 1, WAD));
        assertGe(lib.update(reputation, gamma, true), reputation, "a correct vote never lowers reputation");
        assertLe(lib.update(reputation, gamma, false), reputation, "a wrong vote never raises reputation");
    }

    /// @dev A long random history of votes never leaves [0, 1].
    function testFuzz_update_staysWithinUnitInterval(uint64 reputation, uint64 gamma, uint256 votes) public view {
        uint64 r = uint64(bound(reputation, 0, WAD));
        gamma = uint64(bound(gamma, 1, WAD));
        for (uint256 i; i < 64; ++i) {
            r = lib.update(r, gamma, (votes >> i) & 1 == 1);
            assertLe(r, WAD);
        }
    }

    // ------------------------------------------------------------------ slashProbabilityBps (eq. 3.9)

    function test_slashProbability_paperDefaults() public view {
        assertEq(lib.slashProbabilityBps(WAD, 3_500, 5_000), 3_500, "p_min at r = 1");
        assertEq(lib.slashProbabilityBps(0, 3_500, 5_000), 5_000, "p_max at r = 0");
        assertEq(lib.slashProbabilityBps(0.5e18, 3_500, 5_000), 4_250, "midpoint at r = 1/2");
    }

    function test_slashProbability_roundsUp() public view {
        // (5000 - 3500) * (1 - 0.9999) = 0.15 bps: rounded up to 1.
        assertEq(lib.slashProbabilityBps(0.9999e18, 3_500, 5_000), 3_501);
    }

    function test_slashProbability_reputationAboveOneCountsAsOne() public view {
        assertEq(lib.slashProbabilityBps(WAD + 1, 3_500, 5_000), 3_500);
        assertEq(lib.slashProbabilityBps(type(uint64).max, 3_500, 5_000), 3_500);
    }

    function testFuzz_slashProbability_pMinAtFullReputation(uint16 pMin, uint16 pMax) public view {
        (pMin, pMax) = boundProbabilities(pMin, pMax);
        assertEq(lib.slashProbabilityBps(WAD, pMin, pMax), pMin);
    }

    function testFuzz_slashProbability_pMaxAtZeroReputation(uint16 pMin, uint16 pMax) public view {
        (pMin, pMax) = boundProbabilities(pMin, pMax);
        assertEq(lib.slashProbabilityBps(0, pMin, pMax), pMax);
    }

    function testFuzz_slashProbability_matchesFormula(uint64 reputation, uint16 pMin, uint16 pMax) public view {
        (pMin, pMax) = boundProbabilities(pMin, pMax);
        reputation = uint64(bound(reputation, 0, WAD));
        uint256 span = uint256(pMax - pMin) * (WAD - reputation);
        uint256 expected = pMin + span / WAD + (span % WAD == 0 ? 0 : 1);
        uint256 p = lib.slashProbabilityBps(reputation, pMin, pMax);
        assertEq(p, expected);
        assertGe(p, pMin);
        assertLe(p, pMax);
    }

    function testFuzz_slashProbability_nonIncreasingInReputation(uint64 r1, uint64 r2, uint16 pMin, uint16 pMax)
        public
        view
    {
        (pMin, pMax) = boundProbabilities(pMin, pMax);
        r1 = uint64(bound(r1, 0, WAD));
        r2 = uint64(bound(r2, r1, type(uint64).max));
        assertGe(lib.slashProbabilityBps(r1, pMin, pMax), lib.slashProbabilityBps(r2, pMin, pMax));
    }
}
