// One byte of CRC-16/CCITT-FALSE (docs/uart-bridge.md, "CRC"): polynomial
// 0x1021, MSB first, no reflection; the caller starts from 0xFFFF and applies
// no final XOR. Combinational.
`default_nettype none

module lbrb_crc16 (
    input  wire [15:0] crc_in,
    input  wire [7:0]  data,
    output reg  [15:0] crc_out
);
    integer i;
    always @* begin
        crc_out = crc_in ^ {data, 8'h00};
        for (i = 0; i < 8; i = i + 1)
            crc_out = crc_out[15] ? ((crc_out << 1) ^ 16'h1021) : (crc_out << 1);
    end
endmodule

`default_nettype wire
