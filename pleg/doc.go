// Package pleg judges the kubelet's PLEG (pod lifecycle event generator)
// health long before the kubelet's own hard-coded 3 minute threshold, from
// three signals:
//
//   - lastSeen: now - kubelet_pleg_last_seen_seconds, the one kubelet metric
//     that moves during a hang (untrusted while the Evented PLEG is on);
//   - relistDuration: the relist duration p99 over a window of scrapes;
//   - emulation: hangwatch's own relist, the same CRI calls timed through
//     Relister, which needs no access to the kubelet at all.
//
// Assess is a pure function of what the signals last said; Monitor runs
// the scrape and emulation loops, each with its own deadline, and hands on
// every new Assessment.
package pleg
