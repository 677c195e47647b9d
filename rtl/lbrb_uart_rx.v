// UART receiver for the labrunner UART bridge (docs/uart-bridge.md): 8 data
// bits, no parity, 1 stop bit, LSB first. The line passes a two-flop
// synchroniser; each bit is sampled once, in its middle, counted from the
// falling edge of the start bit. A start bit that is high again at its middle
// is a glitch and is ignored; a byte whose stop bit reads low (a framing
// error, or a break) is dropped, and the receiver waits for the line to go
// high before it looks for the next start bit.
`default_nettype none

module lbrb_uart_rx #(
    // Clock cycles per bit, CLK_HZ / BAUD rounded; at least 4 (mid-bit
    // sampling of an asynchronous line wants 16 or more).
    parameter integer CLKS_PER_BIT = 868
) (
    input  wire       clk,
    input  wire       rst,        // synchronous, active high
    input  wire       rxd,        // the line, idle high
    output reg        valid,      // one-cycle pulse: data holds a received byte
    output reg  [7:0] data,
    output reg        frame_err   // one-cycle pulse: a byte was dropped (stop bit low)
);
    localparam integer CW = $clog2(CLKS_PER_BIT);
    localparam integer HALF_I = CLKS_PER_BIT / 2 - 1;
    localparam integer FULL_I = CLKS_PER_BIT - 1;
    localparam [CW-1:0] HALF = HALF_I[CW-1:0];
    localparam [CW-1:0] FULL = FULL_I[CW-1:0];

    localparam [1:0] IDLE = 2'd0, START = 2'd1, BITS = 2'd2, STOP = 2'd3;

    reg          s1, s2;          // synchroniser
    reg [1:0]    state;
    reg [CW-1:0] cnt;
    reg [2:0]    bitn;
    reg          wait_high;       // after a framing error: wait for an idle line
    reg [7:0]    shift;

    always @(posedge clk) begin
        s1        <= rxd;
        s2        <= s1;
        valid     <= 1'b0;
        frame_err <= 1'b0;
        if (rst) begin
            s1        <= 1'b1;
            s2        <= 1'b1;
            state     <= IDLE;
            cnt       <= {CW{1'b0}};
            bitn      <= 3'd0;
            wait_high <= 1'b0;
            shift     <= 8'h00;
            data      <= 8'h00;
        end else begin
            case (state)
                IDLE: begin
                    if (wait_high) begin
                        wait_high <= ~s2;
                    end else if (!s2) begin
                        state <= START;
                        cnt   <= HALF;
                    end
                end
                START: begin
                    if (cnt != 0) begin
                        cnt <= cnt - 1'b1;
                    end else if (!s2) begin
                        state <= BITS;
                        cnt   <= FULL;
                        bitn  <= 3'd0;
                    end else begin
                        state <= IDLE;    // a glitch, not a start bit
                    end
                end
                BITS: begin
                    if (cnt != 0) begin
                        cnt <= cnt - 1'b1;
                    end else begin
                        shift <= {s2, shift[7:1]};
                        cnt   <= FULL;
                        bitn  <= bitn + 1'b1;
                        if (bitn == 3'd7) state <= STOP;
                    end
                end
                default: begin // STOP
                    if (cnt != 0) begin
                        cnt <= cnt - 1'b1;
                    end else begin
                        state <= IDLE;
                        if (s2) begin
                            valid <= 1'b1;
                            data  <= shift;
                        end else begin
                            frame_err <= 1'b1;
                            wait_high <= 1'b1;
                        end
                    end
                end
            endcase
        end
    end
endmodule

`default_nettype wire
