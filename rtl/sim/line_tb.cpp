// Line testbench: lbrb_example_top at the clock and baud of a board (its
// defaults, 100 MHz and 921600 baud: 109 clocks a bit where 108.5 are
// exact), driven by a host UART that is not in step with the design's
// clock and runs off the nominal baud by PPM parts per million, as a
// USB-UART's own oscillator does. The co-simulation (tb.cpp) drives the
// line in step with the clock at 4 or 8 clocks a bit; this one checks the
// receiver's mid-bit sampling and the transmitter's bit times where a real
// line puts them.
//
// The host sends INFO, a READ of ID and of CLOCK_KHZ (the design's CLK_HZ
// must be the testbench's), a WRITE and a READ of SCRATCH, a
// WRITE_BURST of 256 words into the buffer and a READ_BURST of them back
// (1036 and 1033 bytes back to back, where a receiver that loses a fraction
// of a bit per byte would lose the frame), and checks every answer: its
// bytes (a stop bit that reads low is a framing error), SEQ, CMD, STATUS,
// CRC and words.
//
// Usage: line_tb PPM. Prints one line; exit 0 every answer right, 1 an
// answer wrong or missing, 2 bad usage.
//
// TB_CLK_HZ and TB_BAUD are compiled in (-D), equal to the design's CLK_HZ
// and BAUD parameters.
#include "Vlbrb_example_top.h"
#include "verilated.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#ifndef TB_CLK_HZ
#error "compile with -DTB_CLK_HZ=<the design's CLK_HZ>"
#endif
#ifndef TB_BAUD
#error "compile with -DTB_BAUD=<the design's BAUD>"
#endif

namespace {

constexpr double kCyclePs = 1e12 / double(TB_CLK_HZ);

uint16_t crc16(const uint8_t* p, size_t n) {  // CRC-16/CCITT-FALSE
    uint16_t c = 0xFFFF;
    for (size_t i = 0; i < n; i++) {
        c ^= uint16_t(p[i]) << 8;
        for (int b = 0; b < 8; b++) c = (c & 0x8000) ? uint16_t((c << 1) ^ 0x1021) : uint16_t(c << 1);
    }
    return c;
}

std::vector<uint8_t> request(uint8_t seq, uint8_t cmd, uint32_t addr, uint16_t count,
                             const std::vector<uint32_t>& data) {
    std::vector<uint8_t> f = {0xA5, 0x5A, seq, cmd};
    for (int i = 0; i < 4; i++) f.push_back(uint8_t(addr >> (8 * i)));
    f.push_back(uint8_t(count));
    f.push_back(uint8_t(count >> 8));
    for (uint32_t w : data)
        for (int i = 0; i < 4; i++) f.push_back(uint8_t(w >> (8 * i)));
    uint16_t c = crc16(f.data() + 2, f.size() - 2);
    f.push_back(uint8_t(c));
    f.push_back(uint8_t(c >> 8));
    return f;
}

// The host's transmitter: 8N1, LSB first, back to back, bit time bitPs.
struct HostTx {
    double bitPs;
    std::deque<uint8_t> q;
    bool active = false;
    double start = 0, free = 0;  // this byte's start; when the line is free
    uint8_t cur = 0;

    int level(double t) {
        for (;;) {
            if (!active) {
                if (q.empty()) return 1;
                cur = q.front();
                q.pop_front();
                active = true;
                start = free > t ? free : t;
            }
            if (t < start) return 1;
            int bit = int((t - start) / bitPs);
            if (bit >= 10) {
                active = false;
                free = start + 10 * bitPs;
                continue;
            }
            if (bit == 0) return 0;
            if (bit <= 8) return (cur >> (bit - 1)) & 1;
            return 1;
        }
    }
};

// The host's receiver: finds a start bit's falling edge and samples each
// bit in its middle by its own bit time.
struct HostRx {
    double bitPs;
    int bit = -1;
    double t0 = 0;
    uint8_t cur = 0;
    bool prev = true;
    int framingErrors = 0;

    // One look at the line at time t; true with *out set when a byte is in.
    bool step(double t, int level, uint8_t* out) {
        bool got = false;
        if (bit < 0) {
            if (prev && !level) {
                bit = 0;
                t0 = t - kCyclePs / 2;  // the edge came within the last cycle
            }
        } else if (t >= t0 + (bit + 0.5) * bitPs) {
            if (bit == 0) {
                bit = level ? -1 : 1;  // high at its middle: a glitch
            } else if (bit <= 8) {
                cur = uint8_t((cur >> 1) | (level ? 0x80 : 0));
                bit++;
            } else {
                if (level) {
                    *out = cur;
                    got = true;
                } else {
                    framingErrors++;
                }
                bit = -1;
            }
        }
        prev = level != 0;
        return got;
    }
};

struct Bench {
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<Vlbrb_example_top> top;
    HostTx tx;
    HostRx rx;
    uint64_t cycles = 0;
    uint8_t seq = 0x40;

    explicit Bench(double bitPs) : ctx(new VerilatedContext), tx{bitPs}, rx{bitPs} {
        top.reset(new Vlbrb_example_top(ctx.get()));
        top->uart_rxd = 1;
        top->rst_n = 0;
        for (int i = 0; i < 16; i++) tick(nullptr);
        top->rst_n = 1;
        for (int i = 0; i < 16; i++) tick(nullptr);
    }

    // One clock cycle; a byte the host received goes to in.
    void tick(std::vector<uint8_t>* in) {
        double t = double(cycles) * kCyclePs;
        top->uart_rxd = uint8_t(tx.level(t));
        top->clk = 0;
        top->eval();
        top->clk = 1;
        top->eval();
        cycles++;
        uint8_t b;
        if (rx.step(double(cycles) * kCyclePs, top->uart_txd, &b) && in) in->push_back(b);
    }

    // Sends a request and returns the answer's words, or an error.
    bool exchange(const char* what, uint8_t cmd, uint32_t addr, uint16_t count, const std::vector<uint32_t>& data,
                  uint8_t wantStatus, std::vector<uint32_t>* words, std::string* err) {
        std::vector<uint8_t> f = request(seq, cmd, addr, count, data);
        tx.q.insert(tx.q.end(), f.begin(), f.end());
        size_t wantWords = (wantStatus == 0 && (cmd == 0x00 || cmd == 0x01 || cmd == 0x03)) ? (cmd == 0 ? 4 : count) : 0;
        size_t wantLen = 9 + 4 * wantWords;
        // The request's and the answer's line time, and a millisecond.
        uint64_t limit = cycles + uint64_t((f.size() + wantLen) * 10 * tx.bitPs / kCyclePs * 1.1) + TB_CLK_HZ / 1000;
        std::vector<uint8_t> in;
        int fe = rx.framingErrors;
        while (in.size() < wantLen && cycles < limit) tick(&in);
        char buf[256];
        auto fail = [&](const char* why) {
            std::snprintf(buf, sizeof buf, "%s: %s (%zu of %zu answer bytes, %d framing errors)", what, why, in.size(),
                          wantLen, rx.framingErrors - fe);
            *err = buf;
            return false;
        };
        if (in.size() < wantLen) return fail("no complete answer within its line time and 1 ms");
        if (rx.framingErrors != fe) return fail("framing errors in the answer");
        if (in[0] != 0x5A || in[1] != 0xA5 || in[2] != seq || in[3] != (cmd | 0x80)) return fail("wrong header");
        if (in[4] != wantStatus) return fail("wrong status");
        if (size_t(in[5] | (in[6] << 8)) != wantWords) return fail("wrong COUNT");
        uint16_t c = crc16(in.data() + 2, wantLen - 4);
        if (in[wantLen - 2] != uint8_t(c) || in[wantLen - 1] != uint8_t(c >> 8)) return fail("CRC mismatch");
        words->clear();
        for (size_t i = 0; i < wantWords; i++) {
            const uint8_t* p = in.data() + 7 + 4 * i;
            words->push_back(uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24);
        }
        // Nothing more may follow.
        for (int i = 0; i < 2000; i++) tick(&in);
        if (in.size() != wantLen) return fail("bytes after the answer");
        seq++;
        return true;
    }
};

}  // namespace

int main(int argc, char** argv) {
    char* end = nullptr;
    long ppm = argc == 2 ? std::strtol(argv[1], &end, 10) : 0;
    if (argc != 2 || *end != '\0' || ppm <= -500000 || ppm >= 500000) {
        std::fprintf(stderr, "usage: line_tb PPM (the host's baud off the nominal, in parts per million)\n");
        return 2;
    }
    double bitPs = 1e12 / (double(TB_BAUD) * (1.0 + double(ppm) * 1e-6));
    Bench b(bitPs);

    std::vector<uint32_t> w, burst(256);
    for (size_t i = 0; i < burst.size(); i++) burst[i] = 0x9E3779B9u * uint32_t(i + 1) ^ 0x55AA00FFu;
    std::string err;
    bool ok = b.exchange("INFO", 0x00, 0, 0, {}, 0, &w, &err) &&
              (w == std::vector<uint32_t>{0x4252424C, 1, 256, 0x5A170001} || (err = "INFO: wrong words", false)) &&
              b.exchange("READ ID", 0x01, 0x000, 1, {}, 0, &w, &err) &&
              (w == std::vector<uint32_t>{0x42524558} || (err = "READ ID: wrong word", false)) &&
              b.exchange("READ CLOCK_KHZ", 0x01, 0x00C, 1, {}, 0, &w, &err) &&
              (w == std::vector<uint32_t>{TB_CLK_HZ / 1000} ||
               (err = "READ CLOCK_KHZ: the design's CLK_HZ is not the testbench's", false)) &&
              b.exchange("WRITE SCRATCH", 0x02, 0x008, 1, {0xA5C30F96}, 0, &w, &err) &&
              b.exchange("READ SCRATCH", 0x01, 0x008, 1, {}, 0, &w, &err) &&
              (w == std::vector<uint32_t>{0xA5C30F96} || (err = "READ SCRATCH: wrong word", false)) &&
              b.exchange("WRITE_BURST 256", 0x04, 0x800, 256, burst, 0, &w, &err) &&
              b.exchange("READ_BURST 256", 0x03, 0x800, 256, {}, 0, &w, &err) &&
              (w == burst || (err = "READ_BURST 256: words differ from those written", false));
    double clocksPerBit = bitPs / kCyclePs;
    if (!ok) {
        std::printf("FAIL ppm=%ld host_clocks_per_bit=%.2f: %s\n", ppm, clocksPerBit, err.c_str());
        return 1;
    }
    std::printf("ok ppm=%ld host_clocks_per_bit=%.2f cycles=%" PRIu64 "\n", ppm, clocksPerBit, b.cycles);
    b.top->final();
    return 0;
}
