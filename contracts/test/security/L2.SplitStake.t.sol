// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {console} from "forge-std/console.sol";

import {TRUSTBase} from "../TRUSTBase.sol";
import {DrawRequest} from "../../src/types/Settlement.sol";

/// @title Issue 16, finding L2 (OPEN): splitting stake into many accounts wins more seats.
/// @notice The committee draw seats distinct accounts: it draws proportionally to stake *without
///         replacement*, so one account can hold at most one seat of a committee however much it
///         stakes. The same stake split over k accounts can hold up to k seats, and its expected
///         seats grow with k towards c * share (c seats, share = its fraction of the tier's
///         stake). Every aligned seat earns the same reward R, so a splitter earns more per unit
///         of stake than an honest single account: the draw rewards account count, not only stake.
///         Voting power does not follow: a seat weighs its member's stake, so one large account,
///         when seated, carries more of the committee's weight than a few small ones (measured
///         below: the expected weight share falls as the stake is split). Splitting buys seats
///         and rewards, not votes.
///
///         This test measures it (expected seats, expected committee weight and expected rewards
///         per draw, over many seeds, for one account and for k = 2, 4, 8 accounts of the same
///         total stake) and asserts the behaviour as it is today. It documents an open finding; it
///         is not a defence. When L2 is fixed it must fail, and be turned around to assert that
///         splitting gains nothing.
///
///         What a fix must change: seats proportional to stake, not to accounts. For example, draw
///         each seat *with replacement* and let an account hold several seats (multiplicity), each
///         seat weighing and locking as one unit (Kleros v2 draws jurors with replacement and locks
///         stake per drawn vote); or keep distinct members but give each the weight of the number
///         of times it was drawn. Then an account's expected seats are c * share whether it is one
///         account or k, and splitting is pointless.
contract L2SplitStakeTest is TRUSTBase {
    uint256 internal constant HONEST = 10;
    uint256 internal constant HONEST_STAKE = 1_000e18;
    /// @dev 30% of the tier's stake: 4,286 against 10,000.
    uint256 internal constant SPLITTER_STAKE = 4_284e18;
    uint256 internal constant SEATS = 3;
    uint256 internal constant DRAWS = 400;
    uint256 internal constant WAD = 1e18;

    struct Outcome {
        uint256 seatsWad; // expected seats per draw
        uint256 weightShareWad; // expected share of the committee's weight per draw
    }

    function setUp() public override {
        super.setUp();
        addAuditors("honest", 1, HONEST, HONEST_STAKE);
        // The test plays the audit contract: it calls the draw itself, with no lock, so that the
        // draws leave nothing behind and every one sees the same registry.
        registry.setAuditContract(address(this));
    }

    /// @notice Expected seats, weight and rewards of stake s as one account versus split into k
    ///         accounts: splitting wins seats and rewards (the open finding), not weight.
    function test_L2_open_splittingStakeWinsMoreSeats() public {
        uint256[4] memory ks = [uint256(1), 2, 4, 8];
        Outcome[4] memory out;
        for (uint256 i; i < ks.length; ++i) {
            out[i] = _measure(ks[i]);
        }
        uint256 share = SPLITTER_STAKE * WAD / (SPLITTER_STAKE + HONEST * HONEST_STAKE);
        uint256 rewardWei = defaultParams().rewardPerSeatWei;
        console.log("L2: committee of %d seats; the splitter holds %d / 1e18 of the tier's stake", SEATS, share);
        console.log("    proportional seats (c * share, with replacement), 1e18 = one seat:", SEATS * share);
        for (uint256 i; i < ks.length; ++i) {
            // Every aligned seat earns R: expected reward per draw = seats * R (if every seat aligns).
            uint256 rewardPerDraw = out[i].seatsWad * rewardWei / WAD;
            console.log("  k = %d accounts: expected seats per draw (1e18 = one seat) %d", ks[i], out[i].seatsWad);
            console.log("      expected share of the committee weight (1e18 = all) %d", out[i].weightShareWad);
            console.log(
                "      expected reward per draw %d wei; per 1,000 tokens staked %d wei",
                rewardPerDraw,
                rewardPerDraw * 1_000e18 / SPLITTER_STAKE
            );
            console.log("      gain in seats and rewards over one account (1e18 = none)", out[i].seatsWad * WAD / out[0].seatsWad);
        }

        // One account holds at most one seat of a committee: below its proportional share.
        assertLe(out[0].seatsWad, WAD, "one account held two seats of a committee");
        assertLt(out[0].seatsWad, SEATS * share, "one account is not under-seated");
        // The open finding: the same stake in more accounts holds more seats, and so earns more R.
        // Its share of the committee weight (the votes) does not grow: it falls.
        for (uint256 i = 1; i < ks.length; ++i) {
            assertGt(out[i].seatsWad, out[i - 1].seatsWad, "splitting further did not win more seats");
            assertLt(out[i].weightShareWad, out[i - 1].weightShareWad, "splitting won committee weight");
        }
        // Eight accounts gain at least 20% more seats (and rewards) than one, for the same stake.
        assertGt(out[3].seatsWad * 10, out[0].seatsWad * 12, "splitting gains under 20%");
    }

    /// @dev Registers the splitter's stake as `k` equal accounts, draws `DRAWS` committees of tier 1
    ///      with fixed seeds, and averages its seats and its share of each committee's weight.
    ///      Rolled back afterwards, so every k draws from the same honest auditors.
    function _measure(uint256 k) internal returns (Outcome memory out) {
        uint256 snapshot = vm.snapshotState();
        address[] memory mine = addAuditors(string.concat("split", vm.toString(k), "-"), 1, k, SPLITTER_STAKE / k);
        vm.roll(block.number + 1);
        uint256 seats;
        uint256 shareSum;
        for (uint256 d; d < DRAWS; ++d) {
            (address[] memory members, uint96[] memory weights) = registry.drawCommittee(
                DrawRequest({
                    tier: 1,
                    size: uint8(SEATS),
                    seed: keccak256(abi.encode("L2", d)),
                    snapshotBlock: block.number - 1,
                    excluded: address(0),
                    lockPerSeat: 0
                })
            );
            assertEq(members.length, SEATS, "committee not seated");
            uint256 total;
            uint256 theirs;
            for (uint256 i; i < members.length; ++i) {
                total += weights[i];
                if (_contains(mine, members[i])) {
                    seats += 1;
                    theirs += weights[i];
                }
            }
            shareSum += theirs * WAD / total;
        }
        out = Outcome({seatsWad: seats * WAD / DRAWS, weightShareWad: shareSum / DRAWS});
        vm.revertToState(snapshot);
    }

    function _contains(address[] memory list, address who) internal pure returns (bool) {
        for (uint256 i; i < list.length; ++i) {
            if (list[i] == who) return true;
        }
        return false;
    }
}
