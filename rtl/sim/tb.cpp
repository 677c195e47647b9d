// Co-simulation testbench of the design "bridge-example" (lbrb_example_top):
// the simulated UART is served on a pseudo-terminal, so labrunner opens it
// exactly as it opens a USB-UART (tarm/serial on /dev/pts/N).
//
// Bytes the host writes to the pty are shifted into uart_rxd bit by bit at
// the simulated baud; bits the design drives on uart_txd are sampled in the
// middle of each bit time and the bytes written to the pty. Simulated time
// is held to wall-clock time: the simulation runs TB_CLK_HZ cycles a second
// of wall time, a chunk of 50 us at a time, sleeping (in ppoll)
// when it is more than a chunk ahead. When it cannot keep up
// it runs flat out and catches up, by at most kMaxBehindNs: a loaded
// machine that takes the CPU away for a few milliseconds then sees the
// bytes of that time come in a burst, as a USB-UART delivers them, and the
// line keeps its rate on average. Lag beyond that is forgiven rather than
// made up (running long faster than real time would shorten the design's
// timeouts as the host sees them), and the line is that much slower.
//
// Protocol on stdin/stdout (one line each):
//   out: "pty PATH" once the pty is ready
//   in:  "stats"    out: "stats cycles=N sim_ns=N wall_ns=N busy_ns=N cpu_ns=N rx_bytes=N tx_bytes=N"
//                   (busy_ns: wall time spent simulating, not sleeping; cpu_ns: CPU
//                   time spent simulating, which a loaded machine does not inflate)
//   in:  "quit" or end of input: exit 0
//
// TB_CLK_HZ and TB_BAUD are compiled in (-D), equal to the design's CLK_HZ
// and BAUD parameters (-G), so that bit times agree.
#include "Vlbrb_example_top.h"
#include "verilated.h"

#include <cerrno>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <memory>
#include <poll.h>
#include <string>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <vector>

#ifndef TB_CLK_HZ
#error "compile with -DTB_CLK_HZ=<the design's CLK_HZ>"
#endif
#ifndef TB_BAUD
#error "compile with -DTB_BAUD=<the design's BAUD>"
#endif

namespace {

constexpr uint64_t kClkHz = TB_CLK_HZ;
constexpr uint64_t kBaud = TB_BAUD;
// As lbrb_bridge computes it.
constexpr uint64_t kClksPerBit = (kClkHz + kBaud / 2) / kBaud;
constexpr int64_t kMaxBehindNs = 20000000; // 20 ms
// Cycles between looks at the pty and the clock: 50 us of simulated time,
// so that a byte waits at most that long to enter or leave the simulation
// (a byte time is 87 us at 115200 baud, 11 us at 921600), while the looks
// (a few system calls, 20000 a second) stay a small part of the work.
constexpr uint64_t kChunk = kClkHz / 20000 > 0 ? kClkHz / 20000 : 1;
constexpr int64_t kChunkNs = int64_t(kChunk * 1000000000ull / kClkHz);

int64_t clockNs(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
int64_t nowNs() { return clockNs(CLOCK_MONOTONIC); }
int64_t cpuNs() { return clockNs(CLOCK_THREAD_CPUTIME_ID); }

void die(const char* what) {
    std::fprintf(stderr, "tb: %s: %s\n", what, std::strerror(errno));
    std::exit(3);
}

// Host to design: shifts queued bytes onto uart_rxd, 8N1, LSB first.
struct Serializer {
    std::deque<uint8_t> q;
    int bit = -1;           // -1 idle, 0 start, 1..8 data, 9 stop
    uint64_t left = 0;      // cycles left in this bit
    uint8_t cur = 0;

    int line() const {
        if (bit < 0) return 1;
        if (bit == 0) return 0;
        if (bit <= 8) return (cur >> (bit - 1)) & 1;
        return 1;
    }
    // Called once per cycle, before the clock edge; returns the line level.
    int step() {
        if (bit < 0) {
            if (q.empty()) return 1;
            cur = q.front();
            q.pop_front();
            bit = 0;
            left = kClksPerBit;
        }
        int v = line();
        if (--left == 0) {
            if (++bit > 9) bit = -1;
            else left = kClksPerBit;
        }
        return v;
    }
    bool idle() const { return bit < 0 && q.empty(); }
};

// Design to host: samples uart_txd in the middle of each bit.
struct Deserializer {
    int bit = -1;           // -1 waiting for a start bit, else bits sampled so far
    uint64_t wait = 0;      // cycles to the next sample
    uint8_t cur = 0;
    bool prev = true;

    // Called once per cycle with the line level; returns true with *out set
    // when a byte is complete.
    bool step(int level, uint8_t* out) {
        bool got = false;
        if (bit < 0) {
            if (prev && !level) {            // falling edge: a start bit
                bit = 0;
                wait = kClksPerBit / 2;      // to the middle of the start bit
            }
        } else if (--wait == 0) {
            if (bit == 0) {
                if (level) bit = -1;         // not a start bit after all
                else { bit = 1; wait = kClksPerBit; }
            } else if (bit <= 8) {
                cur = uint8_t((cur >> 1) | (level ? 0x80 : 0));
                bit++;
                wait = kClksPerBit;
            } else {                         // stop bit
                if (level) { *out = cur; got = true; }
                bit = -1;
            }
        }
        prev = level != 0;
        return got;
    }
};

int openPty(std::string* path, int* slave) {
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0) die("posix_openpt");
    if (grantpt(m) != 0) die("grantpt");
    if (unlockpt(m) != 0) die("unlockpt");
    const char* name = ptsname(m);
    if (!name) die("ptsname");
    *path = name;
    // Hold the slave open ourselves: the master then never sees EIO when
    // the host closes and reopens the port between commands.
    int s = open(name, O_RDWR | O_NOCTTY);
    if (s < 0) die("open the pty slave");
    struct termios t;
    if (tcgetattr(s, &t) != 0) die("tcgetattr");
    cfmakeraw(&t);
    t.c_cflag |= CLOCAL | CREAD;
    speed_t sp = kBaud == 115200 ? B115200 : kBaud == 230400 ? B230400 : kBaud == 460800 ? B460800
               : kBaud == 921600 ? B921600 : B9600;
    cfsetispeed(&t, sp);
    cfsetospeed(&t, sp);
    if (tcsetattr(s, TCSANOW, &t) != 0) die("tcsetattr");
    int fl = fcntl(m, F_GETFL);
    if (fl < 0 || fcntl(m, F_SETFL, fl | O_NONBLOCK) != 0) die("make the pty master non-blocking");
    *slave = s;
    return m;
}

}  // namespace

int main(int argc, char** argv) {
    signal(SIGPIPE, SIG_IGN);
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(argc, argv);
    auto top = std::make_unique<Vlbrb_example_top>(ctx.get());

    std::string path;
    int slave = -1;
    int master = openPty(&path, &slave);
    int fl = fcntl(0, F_GETFL);
    if (fl >= 0) fcntl(0, F_SETFL, fl | O_NONBLOCK);

    Serializer ser;
    Deserializer des;
    std::vector<uint8_t> out;        // bytes for the host not yet written
    uint64_t cycles = 0, rxBytes = 0, txBytes = 0;
    std::string cmd;

    // Reset.
    top->uart_rxd = 1;
    top->rst_n = 0;
    for (int i = 0; i < 16; i++) {
        top->clk = 0; top->eval();
        top->clk = 1; top->eval();
    }
    top->rst_n = 1;

    std::printf("pty %s\n", path.c_str());
    std::fflush(stdout);

    const int64_t t0 = nowNs();
    int64_t debt = 0;                // ns of simulated time forgiven when behind
    int64_t busyNs = 0, simCpuNs = 0;
    uint8_t buf[4096];
    bool quit = false;
    while (!quit && !ctx->gotFinish()) {
        // Where simulated time stands against the wall clock.
        int64_t wall = nowNs() - t0 - debt;
        int64_t sim = int64_t(cycles * 1000000000ull / kClkHz);
        if (wall - sim > kMaxBehindNs) {
            debt += wall - sim - kMaxBehindNs;
            wall = sim + kMaxBehindNs;
        }
        if (sim - wall > kChunkNs || !out.empty()) {
            // More than a chunk ahead of the wall clock: sleep until it
            // catches up (at most 10 ms), or until the host writes.
            int64_t ahead = sim - wall > kChunkNs ? sim - wall : 0;
            if (ahead > 10000000) ahead = 10000000;
            struct timespec ts = {time_t(ahead / 1000000000), long(ahead % 1000000000)};
            struct pollfd p[2] = {{master, POLLIN, 0}, {0, POLLIN, 0}};
            if (!out.empty()) p[0].events |= POLLOUT;
            ppoll(p, 2, &ts, nullptr);
        }
        // Host to design.
        for (;;) {
            ssize_t n = read(master, buf, sizeof buf);
            if (n > 0) {
                ser.q.insert(ser.q.end(), buf, buf + n);
                rxBytes += uint64_t(n);
                continue;
            }
            break;  // EAGAIN, or EIO while the slave is between opens
        }
        // Commands.
        for (;;) {
            ssize_t n = read(0, buf, sizeof buf);
            if (n == 0) { quit = true; break; }
            if (n < 0) break;
            cmd.append(reinterpret_cast<char*>(buf), size_t(n));
        }
        size_t nl;
        while ((nl = cmd.find('\n')) != std::string::npos) {
            std::string line = cmd.substr(0, nl);
            cmd.erase(0, nl + 1);
            if (line == "quit") {
                quit = true;
            } else if (line == "stats") {
                std::printf("stats cycles=%" PRIu64 " sim_ns=%" PRIu64 " wall_ns=%" PRId64 " busy_ns=%" PRId64
                            " cpu_ns=%" PRId64 " rx_bytes=%" PRIu64 " tx_bytes=%" PRIu64 "\n",
                            cycles, cycles * 1000000000ull / kClkHz, nowNs() - t0, busyNs, simCpuNs, rxBytes,
                            txBytes);
                std::fflush(stdout);
            } else if (!line.empty()) {
                std::fprintf(stderr, "tb: unknown command %s\n", line.c_str());
            }
        }
        // Simulate a chunk, unless that would take the simulation more
        // than a chunk ahead of the wall clock.
        wall = nowNs() - t0 - debt;
        sim = int64_t(cycles * 1000000000ull / kClkHz);
        if (sim - wall <= kChunkNs) {
            int64_t b0 = nowNs(), c0 = cpuNs();
            for (uint64_t i = 0; i < kChunk; i++) {
                top->uart_rxd = uint8_t(ser.step());
                top->clk = 0;
                top->eval();
                top->clk = 1;
                top->eval();
                uint8_t byte;
                if (des.step(top->uart_txd, &byte)) out.push_back(byte);
            }
            cycles += kChunk;
            busyNs += nowNs() - b0;
            simCpuNs += cpuNs() - c0;
        }
        // Design to host.
        if (!out.empty()) {
            ssize_t n = write(master, out.data(), out.size());
            if (n > 0) {
                txBytes += uint64_t(n);
                out.erase(out.begin(), out.begin() + n);
            }
        }
    }
    top->final();
    close(master);
    close(slave);
    return 0;
}
