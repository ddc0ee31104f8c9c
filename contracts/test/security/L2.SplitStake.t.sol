// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {console} from "forge-std/console.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";

import {TRUSTAuditBase} from "../TRUSTBase.sol";
import {ITRUSTAudit} from "../../src/interfaces/ITRUSTAudit.sol";
import {DrawRequest} from "../../src/types/Settlement.sol";

/// @title Issue 16, finding L2: splitting stake into many accounts wins nothing.
/// @notice The attack: an auditor holding 30% of tier 1's stake (4,284 tokens against ten honest
///         members of 1,000) registers it as k accounts of 4,284 / k instead of one, to be drawn
///         into more seats and earn the reward R of more aligned seats per token staked.
///         Before (eb9e4c1) committees were drawn *without replacement*, one seat per account, so
///         one account held at most one seat of a committee however much it staked. Over 400
///         committees of three: one account held 0.74 seats per committee, the same stake as
///         2 / 4 / 8 accounts 0.88 / 0.91 / 1.01 (proportional: 0.90), i.e. 19% / 24% / 37% more
///         seats and rewards per token than one account; its share of the committee's weight fell
///         instead (50% as one account, 24% as eight): splitting bought rewards, not votes.
///         The defence asserted here (7430925): a committee is `c` draws *with replacement*, each
///         landing on a member with probability stake / total at the snapshot; a member keeps one
///         seat weighing the draws it won (its units), locks P, votes, earns R and forfeits P per
///         unit. The stake's units per committee are then Binomial(c, share) whether it sits in one
///         account or in k, so the same stake gets the same expected units (c * share), the same
///         expected weight share (share) and the same expected reward (c * share * R), and one
///         account is no longer under-seated: it may hold several draws of one committee.
/// @dev Statistical tolerance. With nobody passed over (no lock in the pure draw below; in the
///      end-to-end test every account's stake backs about twice the draws a session gives it)
///      the splitter's units in one committee are
///      Binomial(c, p), p = its share of the stake: mean c p, variance c p (1 - p). The mean of N
///      independent committees (every draw has its own keccak256 seed) has standard deviation
///      sd = sqrt(c p (1 - p) / N); each measured mean must lie within Z = 4 sd of c p (a false
///      alarm once in about 16,000 measurements were the seeds random; they are fixed, so the test
///      is deterministic). Here c = 3, p = 0.2999, N = 2,000: sd = 0.0177 units per committee, a
///      tolerance of +/- 0.071 (8% of c p = 0.90). The figures before the fix fail it: one account
///      at 0.74 is 9 sd under, eight accounts at 1.01 6 sd over. The weight share's tolerance is
///      the units' divided by c, the reward's the units' times R.
contract L2SplitStakeTest is TRUSTAuditBase {
    uint256 internal constant HONEST = 10;
    uint256 internal constant HONEST_STAKE = 1_000e18;
    /// @dev 30% of the tier's stake: 4,284 against 10,000.
    uint256 internal constant SPLITTER_STAKE = 4_284e18;
    /// @dev Draws per tier-1 committee (c).
    uint256 internal constant SIZE = 3;
    /// @dev Committees drawn per account count in the pure draw measurement (N).
    uint256 internal constant COMMITTEES = 2_000;
    /// @dev Standard deviations of tolerance.
    uint256 internal constant Z = 4;
    /// @dev The end-to-end measurement: sessions of this many tier-1 segments, each drawn,
    ///      voted, finalized and paid through the audit contract.
    uint256 internal constant E2E_SESSIONS = 4;
    uint256 internal constant E2E_SEGMENTS = 256;
    uint256 internal constant PENALTY = 8e18;

    struct Outcome {
        uint256 unitsWad; // the splitter's expected units per committee, 1e18 = one draw
        uint256 weightShareWad; // its expected share of the committee's weight, 1e18 = all
        uint256 maxAccountUnits; // the most draws one of its accounts won in one committee
    }

    /// @dev Registers the ten honest members and the splitter's stake as `k` equal accounts,
    ///      each of these right after an honest one. Interleaved, the accounts sit apart in the
    ///      sortition tree, and each k lays the tree out differently: the same seeds then land
    ///      differently for each k, and the measurements compare expectations. (Registered one
    ///      after the other, k accounts take one interval of the tree's range whatever k, and draws
    ///      with replacement give them exactly the same units on every seed.)
    function _register(uint256 k) internal returns (address[] memory mine) {
        mine = new address[](k);
        uint256 n = HONEST > k ? HONEST : k;
        for (uint256 i; i < n; ++i) {
            if (i < HONEST) addAuditor(string.concat("honest", vm.toString(i)), 1, HONEST_STAKE);
            if (i < k) {
                mine[i] = addAuditor(string.concat("split", vm.toString(k), "-", vm.toString(i)), 1, SPLITTER_STAKE / k);
            }
        }
    }

    /// @dev The splitter's share of the tier's stake, 1e18 = all.
    function shareWad() internal pure returns (uint256) {
        return SPLITTER_STAKE * WAD / (SPLITTER_STAKE + HONEST * HONEST_STAKE);
    }

    /// @dev Z standard deviations of the mean of `committees` Binomial(SIZE, p) counts (see the
    ///      contract's notes), in units per committee, 1e18 = one draw.
    function toleranceWad(uint256 pWad, uint256 committees) internal pure returns (uint256) {
        return Z * Math.sqrt(SIZE * pWad * (WAD - pWad) / committees);
    }

    /// @notice Expected units, weight share and rewards of stake s as one account versus split
    ///         into k = 2, 4, 8 accounts, over the same 2,000 fixed seeds: all equal to the
    ///         proportional share within the binomial tolerance.
    function test_L2_splittingStakeGainsNothing() public {
        uint256[4] memory ks = [uint256(1), 2, 4, 8];
        Outcome[4] memory out;
        for (uint256 i; i < ks.length; ++i) {
            out[i] = _measure(ks[i]);
        }
        uint256 p = shareWad();
        uint256 expected = SIZE * p;
        uint256 tol = toleranceWad(p, COMMITTEES);
        uint256 rewardWei = defaultParams().rewardPerSeatWei;

        console.log("L2: committees of %d draws; the splitter holds %d / 1e18 of the tier's stake", SIZE, p);
        console.log("    proportional units per committee c * share (1e18 = one draw): %d", expected);
        console.log("    tolerance +/- %d: %d sd of the mean of %d Binomial(c, share) counts", tol, Z, COMMITTEES);
        console.log("    before (eb9e4c1, one seat per account, 400 committees): seats per committee");
        console.log("      0.74 / 0.88 / 0.91 / 1.01 for 1 / 2 / 4 / 8 accounts: +19% / +24% / +37% seats");
        console.log("      and rewards per token over one account; weight share 50% / 42% / 32% / 24%");
        console.log("    now (draws with replacement, a seat weighs its units):");
        for (uint256 i; i < ks.length; ++i) {
            // Every aligned unit earns R: expected reward per committee = units * R (all aligned).
            uint256 rewardPerCommittee = out[i].unitsWad * rewardWei / WAD;
            console.log("  k = %d accounts: expected units per committee (1e18 = one draw) %d", ks[i], out[i].unitsWad);
            console.log("      expected share of the committee weight (1e18 = all) %d", out[i].weightShareWad);
            console.log(
                "      expected reward per committee %d wei; per 1,000 tokens staked %d wei",
                rewardPerCommittee,
                rewardPerCommittee * 1_000e18 / SPLITTER_STAKE
            );
            console.log("      gain over one account (1e18 = none) %d", out[i].unitsWad * WAD / out[0].unitsWad);
            console.log("      most draws one account won in a committee %d", out[i].maxAccountUnits);
        }

        for (uint256 i; i < ks.length; ++i) {
            assertApproxEqAbs(out[i].unitsWad, expected, tol, "units per committee differ from c * share");
            assertApproxEqAbs(out[i].weightShareWad, p, tol / SIZE, "weight share differs from the stake share");
            assertApproxEqAbs(
                out[i].unitsWad * rewardWei / WAD,
                expected * rewardWei / WAD,
                tol * rewardWei / WAD,
                "reward differs from c * share * R"
            );
        }
        // One account is no longer under-seated: it holds its proportional draws, several of one
        // committee at times (before it held at most one seat of a committee).
        assertGe(out[0].unitsWad + tol, expected, "one account is under-seated");
        assertGe(out[0].maxAccountUnits, 2, "one account never held two draws of a committee");
    }

    /// @notice End to end through the audit contract, with the session's P locked per unit: the
    ///         splitter's stake as `k` accounts, four sessions of 256 tier-1 segments opened, drawn
    ///         (`assignAuditorsBatch`), voted Pass by every seat, finalized, distributed and
    ///         claimed. The splitter's units are counted from the seats; each of its accounts locks
    ///         P per unit it won, its claims pay exactly the per-seat reward per unit, and its
    ///         units and rewards per committee match c * share (times R) within the binomial
    ///         tolerance (N = 1,024 committees: +/- 0.099 units, which the figures before the fix,
    ///         0.74 and 1.01, fall outside of) for every k: splitting gains nothing.
    ///         One test per k: each runs near 400 million gas (a test may spend 2^30).
    function _checkEndToEnd(uint256 k) internal {
        uint256 committees = E2E_SESSIONS * E2E_SEGMENTS;
        uint256 p = shareWad();
        uint256 expected = SIZE * p;
        uint256 tol = toleranceWad(p, committees);
        (uint256 units, uint256 rewardWei, uint256 perUnitWei) = _endToEnd(k);
        uint256 unitsWad = units * WAD / committees;
        console.log("L2 end to end, k = %d accounts: %d committees of %d draws", k, committees, SIZE);
        console.log("    units won %d, per committee %d (1e18 = one draw)", units, unitsWad);
        console.log("    proportional c * share %d, tolerance +/- %d", expected, tol);
        console.log(
            "    rewards claimed %d wei, per 1,000 tokens staked %d wei (proportional: %d)",
            rewardWei,
            rewardWei * 1_000e18 / SPLITTER_STAKE,
            expected * committees * perUnitWei / WAD * 1_000e18 / SPLITTER_STAKE
        );
        assertApproxEqAbs(unitsWad, expected, tol, "units per committee differ from c * share");
        assertApproxEqAbs(
            rewardWei,
            expected * committees * perUnitWei / WAD,
            tol * committees * perUnitWei / WAD,
            "rewards differ from c * share * R"
        );
    }

    function test_L2_endToEndOneAccountGetsItsShare() public {
        _checkEndToEnd(1);
    }

    function test_L2_endToEndTwoAccountsGainNothing() public {
        _checkEndToEnd(2);
    }

    function test_L2_endToEndFourAccountsGainNothing() public {
        _checkEndToEnd(4);
    }

    function test_L2_endToEndEightAccountsGainNothing() public {
        _checkEndToEnd(8);
    }

    /// @dev Registers the tier with the splitter's stake as `k` accounts (`_register`), draws
    ///      `COMMITTEES` committees of tier 1 with fixed seeds and averages its units and its share of each committee's
    ///      weight. The test plays the audit contract and draws with no lock, so that the draws
    ///      leave nothing behind and every one sees the same registry (nobody is passed over: the
    ///      draws are exactly with replacement). Rolled back afterwards, so every k draws from the
    ///      same honest auditors.
    function _measure(uint256 k) internal returns (Outcome memory out) {
        uint256 state = vm.snapshotState();
        registry.setAuditContract(address(this));
        address[] memory mine = _register(k);
        vm.roll(block.number + 1);
        uint256 units;
        uint256 shareSum;
        for (uint256 d; d < COMMITTEES; ++d) {
            (address[] memory members, uint96[] memory weights) = registry.drawCommittee(
                DrawRequest({
                    tier: 1,
                    size: uint8(SIZE),
                    seed: keccak256(abi.encode("L2", d)),
                    snapshotBlock: block.number - 1,
                    excluded: address(0),
                    lockPerSeat: 0
                })
            );
            uint256 total;
            uint256 theirs;
            for (uint256 i; i < members.length; ++i) {
                total += weights[i];
                if (contains(mine, members[i])) {
                    theirs += weights[i];
                    if (weights[i] > out.maxAccountUnits) out.maxAccountUnits = weights[i];
                }
            }
            assertEq(total, SIZE, "a committee's weight is its draws");
            units += theirs;
            shareSum += theirs * WAD / total;
        }
        out.unitsWad = units * WAD / COMMITTEES;
        out.weightShareWad = shareSum / COMMITTEES;
        vm.revertToState(state);
    }

    /// @dev Registers the tier with the splitter's stake as `k` accounts (`_register`) and runs `E2E_SESSIONS` sessions through
    ///      the audit contract (see the test); returns the units its accounts won and the ETH they
    ///      claimed, and the reward per unit.
    function _endToEnd(uint256 k) internal returns (uint256 units, uint256 rewardWei, uint256 perUnitWei) {
        address[] memory mine = _register(k);
        for (uint256 s; s < E2E_SESSIONS; ++s) {
            // An external call: each session starts with fresh memory (memory costs grow with
            // the square of its size, and one test's memory would hold every session's arrays).
            (uint256 u, uint256 r, uint256 perUnit) = this.e2eSession(mine);
            units += u;
            rewardWei += r;
            perUnitWei = perUnit; // the same in every session: the same fee and aligned units
        }
    }

    /// @dev The splitter's accounts in a session: the units each won and the seats it claims.
    struct Holdings {
        address[] mine;
        uint256[] units;
        ITRUSTAudit.SeatRef[][] refs;
        uint256[] refCount;
    }

    /// @dev One session of `E2E_SEGMENTS` segments, from opening to the claims of `mine`.
    function e2eSession(address[] memory mine) external returns (uint256 units, uint256 rewardWei, uint256 perUnitWei) {
        uint256 id = openSession(uniformSegments(E2E_SEGMENTS, 1));
        uint256 feeWei = audit.session(id).feeWei;
        drawAll(id);
        Holdings memory h = Holdings({
            mine: mine,
            units: new uint256[](mine.length),
            refs: new ITRUSTAudit.SeatRef[][](mine.length),
            refCount: new uint256[](mine.length)
        });
        for (uint256 a; a < mine.length; ++a) {
            h.refs[a] = new ITRUSTAudit.SeatRef[](E2E_SEGMENTS);
        }
        uint256[] memory all = new uint256[](E2E_SEGMENTS);
        for (uint256 g; g < E2E_SEGMENTS; ++g) {
            all[g] = g;
            _countAndVote(id, g, h);
        }
        for (uint256 a; a < mine.length; ++a) {
            assertEq(registry.auditor(mine[a]).locked, h.units[a] * PENALTY, "P locked per unit won");
            units += h.units[a];
        }
        audit.finalizeSegments(id, all);
        audit.finalizeTrace(id);
        audit.distributeRewards(id);
        assertEq(audit.session(id).alignedSeats, SIZE * E2E_SEGMENTS, "every draw aligned");
        perUnitWei = feeWei * defaultParams().auditorShareBps / BPS / (SIZE * E2E_SEGMENTS);
        for (uint256 a; a < mine.length; ++a) {
            if (h.refCount[a] == 0) continue;
            ITRUSTAudit.SeatRef[] memory list = h.refs[a];
            uint256 n = h.refCount[a];
            assembly ("memory-safe") {
                mstore(list, n)
            }
            uint256 paid = claimAs(mine[a], id, list);
            assertEq(paid, h.units[a] * perUnitWei, "the per-seat reward once per unit");
            rewardWei += paid;
        }
    }

    /// @dev Counts the splitter's units in segment `g` of session `id` and has every seat vote Pass.
    function _countAndVote(uint256 id, uint256 g, Holdings memory h) internal {
        uint256 seatCount = audit.segment(id, g).seatCount;
        uint256 total;
        for (uint256 i; i < seatCount; ++i) {
            ITRUSTAudit.SeatView memory v = audit.seat(id, g, 0, i);
            total += v.weight;
            for (uint256 a; a < h.mine.length; ++a) {
                if (h.mine[a] != v.auditor) continue;
                h.units[a] += v.weight;
                h.refs[a][h.refCount[a]++] = ITRUSTAudit.SeatRef({segmentId: g, seatIndex: i});
            }
            commitAs(v.auditor, id, g, true); // the last commit closes the window at once
        }
        assertEq(total, SIZE, "a committee's weight is its draws");
        revealAll(id, g, true); // the last reveal makes the round final at once
    }
}
