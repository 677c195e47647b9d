// Package shoal drives the Shoal prototype (Shoal: A Network Architecture
// for Disaggregated Racks, NSDI 2019, §4 and §6.1) through its registers only
// (bitstreams/catalogue/shoal.yaml, docs/shoal.md): it describes the rack's
// fabric of NIC and switch boards, writes the static circuit-switch schedule
// to the switches and the NICs, synchronises and boots the rack, loads the
// NICs' traffic generators with the plan's traffic patterns (permutation,
// incast, random and workload flows), runs the rack for a number of slots,
// and reads back counters and per-flow completion records. The same code
// drives the emulated rack and DE5-Net boards: nothing here imports the
// emulator.
package shoal
