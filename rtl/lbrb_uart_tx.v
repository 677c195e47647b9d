// UART transmitter for the labrunner UART bridge: 8N1, LSB first, back to
// back at the line rate (a byte every 10 bit times while the source keeps
// valid high).
`default_nettype none

module lbrb_uart_tx #(
    parameter integer CLKS_PER_BIT = 868
) (
    input  wire       clk,
    input  wire       rst,       // synchronous, active high
    input  wire       valid,     // data is taken in a cycle where valid and ready are both high
    input  wire [7:0] data,
    output wire       ready,
    output wire       txd        // the line, idle high
);
    localparam integer CW = $clog2(CLKS_PER_BIT);
    localparam integer FULL_I = CLKS_PER_BIT - 1;
    localparam [CW-1:0] FULL = FULL_I[CW-1:0];

    reg [9:0]    frame;          // stop, data[7:0], start; shifted out LSB first
    reg [3:0]    left;           // bits still to send, 0 when idle
    reg [CW-1:0] cnt;

    assign ready = (left == 4'd0);
    assign txd   = (left == 4'd0) ? 1'b1 : frame[0];

    always @(posedge clk) begin
        if (rst) begin
            frame <= 10'h3FF;
            left  <= 4'd0;
            cnt   <= {CW{1'b0}};
        end else if (left == 4'd0) begin
            if (valid) begin
                frame <= {1'b1, data, 1'b0};
                left  <= 4'd10;
                cnt   <= FULL;
            end
        end else if (cnt != 0) begin
            cnt <= cnt - 1'b1;
        end else begin
            frame <= {1'b1, frame[9:1]};
            left  <= left - 1'b1;
            cnt   <= FULL;
        end
    end
endmodule

`default_nettype wire
