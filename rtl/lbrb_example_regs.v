// Example register file behind the labrunner UART bridge: the design
// "bridge-example" of the catalogue (bitstreams/catalogue/bridge-example.yaml
// is its register map, docs/uart-bridge.md its programming model). An
// AXI4-Lite slave with the identity registers every design has, a scratch
// register, a free-running cycle counter, a 256-word buffer RAM, a 16-entry
// FIFO reached through push and pop windows, a register answered late (to
// exercise a master's timeout), a soft reset during which the design is busy,
// and a traffic generator with packet, byte and cycle counters.
//
// Responses: DECERR for an address outside the map; SLVERR for a write to a
// read-only register (READ_ONLY on the wire, lbrb_example_top sets the
// bridge so) and for a pop of the empty FIFO (REFUSED); OKAY otherwise.
// Reading a write-only register returns 0.
`default_nettype none

module lbrb_example_regs #(
    parameter integer CLK_HZ = 100_000_000,
    // Cycles CTRL.SOFT_RESET keeps the design busy (10 ms).
    parameter integer RESET_CYCLES = CLK_HZ / 100
) (
    input  wire        clk,
    input  wire        rst_n,          // synchronous, active low

    output wire        busy,           // a soft reset is in progress

    input  wire [31:0] s_axi_awaddr,
    input  wire [2:0]  s_axi_awprot,
    input  wire        s_axi_awvalid,
    output reg         s_axi_awready,
    input  wire [31:0] s_axi_wdata,
    input  wire [3:0]  s_axi_wstrb,
    input  wire        s_axi_wvalid,
    output reg         s_axi_wready,
    output reg  [1:0]  s_axi_bresp,
    output reg         s_axi_bvalid,
    input  wire        s_axi_bready,
    input  wire [31:0] s_axi_araddr,
    input  wire [2:0]  s_axi_arprot,
    input  wire        s_axi_arvalid,
    output reg         s_axi_arready,
    output reg  [31:0] s_axi_rdata,
    output reg  [1:0]  s_axi_rresp,
    output reg         s_axi_rvalid,
    input  wire        s_axi_rready
);
    // ---- the map (bitstreams/catalogue/bridge-example.yaml) -----------------------------------
    localparam [31:0] ID_VALUE      = 32'h4252_4558;   // "BREX"
    localparam [31:0] VERSION_VALUE = 32'h0001_0000;   // 1.0.0
    localparam [31:0] CLOCK_KHZ     = CLK_HZ / 1000;
    localparam [31:0] RESET_CYC32   = RESET_CYCLES;

    localparam [11:0] A_ID = 12'h000, A_VERSION = 12'h004, A_SCRATCH = 12'h008, A_CLOCK_KHZ = 12'h00C,
                      A_CYCLE_LO = 12'h010, A_CYCLE_HI = 12'h014, A_CTRL = 12'h018,
                      A_RESET_CYCLES = 12'h01C, A_FIFO_LEVEL = 12'h020, A_RESP_DELAY = 12'h024,
                      A_DELAYED = 12'h028,
                      A_TG_CTRL = 12'h100, A_TG_STATUS = 12'h104, A_TG_PAYLOAD = 12'h108,
                      A_TG_GAP = 12'h10C, A_TG_COUNT = 12'h110, A_TG_SENT = 12'h114,
                      A_TG_BYTES_LO = 12'h118, A_TG_BYTES_HI = 12'h11C, A_TG_CYCLES = 12'h120;
    localparam [1:0] OKAY = 2'b00, SLVERR = 2'b10, DECERR = 2'b11;

    // Address decoding by range: registers 0x000-0x7FF, buffer RAM
    // 0x800-0xFFF (256 words seen twice: address bits 9:2 pick the word), FIFO
    // push window 0x1000-0x13FF, pop window 0x1400-0x17FF.
    function [1:0] region;              // of address bits 12:10: 0 registers, 1 RAM, 2 push, 3 pop
        input [2:0] a;
        region = (a[2] ? (a[0] ? 2'd3 : 2'd2) : (a[1] ? 2'd1 : 2'd0));
    endfunction
    function in_map;                    // of address bits 31:11: inside one of the four ranges
        input [20:0] a;
        in_map = (a[20:2] == 19'd0) && !(a[1] && a[0]);
    endfunction

    // ---- state ---------------------------------------------------------------------------------
    reg [31:0] scratch;
    reg [63:0] cycles;
    reg [31:0] cycle_hi_latch;
    reg [31:0] resp_delay;
    reg [31:0] delayed;
    reg [31:0] reset_left;              // soft reset: cycles still busy
    reg [31:0] ram [0:255];
    reg [31:0] ram_q;
    reg [31:0] fifo [0:15];
    reg [3:0]  fifo_rd, fifo_wr;
    reg [4:0]  fifo_level;

    // Traffic generator: one 32-bit word a cycle into a sink; a packet of
    // TG_PAYLOAD bytes takes ceil(TG_PAYLOAD/4) cycles, then TG_GAP idle
    // cycles. TG_SENT/TG_BYTES count packets and bytes as each packet's last
    // word leaves; TG_CYCLES counts the cycles the generator ran.
    reg [15:0] tg_payload, tg_gap;
    reg [31:0] tg_count;
    reg        tg_busy, tg_done;
    reg [31:0] tg_sent;
    reg [63:0] tg_bytes;
    reg [31:0] tg_bytes_hi_latch;
    reg [31:0] tg_cycles;
    reg [31:0] tg_run_pkts;             // packets of this run
    reg [16:0] tg_pc;                   // cycle within the packet slot

    wire [15:0] tg_len   = (tg_payload == 16'd0) ? 16'd1 : tg_payload;
    wire [14:0] tg_beats = tg_len[15:2] + {14'd0, (tg_len[1:0] != 2'b00)};
    wire [16:0] tg_slot  = {2'b00, tg_beats} + {1'b0, tg_gap};   // cycles per packet
    wire        tg_last_word = (tg_pc == {2'b00, tg_beats} - 17'd1);
    wire [31:0] tg_run_done  = tg_run_pkts + {31'd0, tg_last_word}; // packets of the run, this cycle's included

    assign busy = (reset_left != 32'd0);

    reg rst = 1'b1;                     // the reset, registered (as in lbrb_bridge)
    always @(posedge clk) rst <= ~rst_n;

    // ---- AXI write channel ---------------------------------------------------------------------
    // One transaction at a time: AW and W are taken together, the write
    // happens, then B is held until accepted. Accesses to DELAYED wait
    // RESP_DELAY cycles first.
    reg        w_pend;                  // AW and W taken, B not yet sent
    reg [31:0] w_addr, w_data;
    reg [31:0] w_wait;
    reg        r_pend;
    reg [31:0] r_addr;
    reg [31:0] r_wait;
    reg        r_ram;                   // the read's data comes from ram_q next cycle

    wire aw_take = s_axi_awvalid && s_axi_wvalid && !w_pend && !s_axi_bvalid && !busy;
    wire ar_take = s_axi_arvalid && !r_pend && !s_axi_rvalid && !r_ram && !busy;

    wire [11:0] wa = w_addr[11:0];
    wire        w_go = w_pend && (w_wait == 32'd0);
    wire        w_inmap = in_map(w_addr[31:11]);
    wire [1:0]  w_reg = region(w_addr[12:10]);

    // write responses: which registers take writes
    wire w_is_rw = (wa == A_SCRATCH) || (wa == A_RESP_DELAY) || (wa == A_DELAYED) ||
                   (wa == A_TG_PAYLOAD) || (wa == A_TG_GAP) || (wa == A_TG_COUNT);
    wire w_is_wo = (wa == A_CTRL) || (wa == A_TG_CTRL);
    wire w_is_ro = (wa == A_ID) || (wa == A_VERSION) || (wa == A_CLOCK_KHZ) || (wa == A_CYCLE_LO) ||
                   (wa == A_CYCLE_HI) || (wa == A_RESET_CYCLES) || (wa == A_FIFO_LEVEL) ||
                   (wa == A_TG_STATUS) || (wa == A_TG_SENT) || (wa == A_TG_BYTES_LO) ||
                   (wa == A_TG_BYTES_HI) || (wa == A_TG_CYCLES);
    wire [1:0] w_resp = !w_inmap ? DECERR :
                        (w_reg == 2'd3) ? SLVERR :                      // the pop window is read-only
                        (w_reg != 2'd0) ? OKAY :
                        (w_is_rw || w_is_wo) ? OKAY : w_is_ro ? SLVERR : DECERR;
    wire w_ok = w_go && (w_resp == OKAY);

    wire [11:0] ra = r_addr[11:0];
    wire        r_go = r_pend && (r_wait == 32'd0);
    wire        r_inmap = in_map(r_addr[31:11]);
    wire [1:0]  r_reg = region(r_addr[12:10]);
    wire        r_pop = r_go && r_inmap && (r_reg == 2'd3);
    wire        r_cyc_lo = r_go && r_inmap && (r_reg == 2'd0) && (ra == A_CYCLE_LO);
    wire        r_tgb_lo = r_go && r_inmap && (r_reg == 2'd0) && (ra == A_TG_BYTES_LO);

    reg  [31:0] r_val;
    reg         r_dec;                  // the register read is not decoded
    always @* begin
        r_dec = 1'b0;
        case (ra)
            A_ID:           r_val = ID_VALUE;
            A_VERSION:      r_val = VERSION_VALUE;
            A_SCRATCH:      r_val = scratch;
            A_CLOCK_KHZ:    r_val = CLOCK_KHZ;
            A_CYCLE_LO:     r_val = cycles[31:0];
            A_CYCLE_HI:     r_val = cycle_hi_latch;
            A_CTRL:         r_val = 32'd0;
            A_RESET_CYCLES: r_val = RESET_CYC32;
            A_FIFO_LEVEL:   r_val = {27'd0, fifo_level};
            A_RESP_DELAY:   r_val = resp_delay;
            A_DELAYED:      r_val = delayed;
            A_TG_CTRL:      r_val = 32'd0;
            A_TG_STATUS:    r_val = {30'd0, tg_busy, tg_done};
            A_TG_PAYLOAD:   r_val = {16'd0, tg_payload};
            A_TG_GAP:       r_val = {16'd0, tg_gap};
            A_TG_COUNT:     r_val = tg_count;
            A_TG_SENT:      r_val = tg_sent;
            A_TG_BYTES_LO:  r_val = tg_bytes[31:0];
            A_TG_BYTES_HI:  r_val = tg_bytes_hi_latch;
            A_TG_CYCLES:    r_val = tg_cycles;
            default: begin
                r_val = 32'd0;
                r_dec = 1'b1;
            end
        endcase
    end

    // ---- RAM -----------------------------------------------------------------------------------
    integer i;
    initial begin
        for (i = 0; i < 256; i = i + 1) ram[i] = 32'd0;   // the configuration's initial contents
    end
    wire ram_we = w_ok && (w_reg == 2'd1);
    always @(posedge clk) begin
        if (ram_we) ram[w_addr[9:2]] <= w_data;
        ram_q <= ram[r_addr[9:2]];
    end

    always @(posedge clk) begin
        if (rst) begin
            s_axi_awready <= 1'b0;
            s_axi_wready  <= 1'b0;
            s_axi_bvalid  <= 1'b0;
            s_axi_bresp   <= OKAY;
            s_axi_arready <= 1'b0;
            s_axi_rvalid  <= 1'b0;
            s_axi_rresp   <= OKAY;
            s_axi_rdata   <= 32'd0;
            w_pend        <= 1'b0;
            w_addr        <= 32'd0;
            w_data        <= 32'd0;
            w_wait        <= 32'd0;
            r_pend        <= 1'b0;
            r_addr        <= 32'd0;
            r_wait        <= 32'd0;
            r_ram         <= 1'b0;
            cycles        <= 64'd0;
            cycle_hi_latch <= 32'd0;
            reset_left    <= 32'd0;
        end else begin
            cycles <= cycles + 64'd1;
            if (reset_left != 32'd0) reset_left <= reset_left - 32'd1;

            // write channel
            s_axi_awready <= 1'b0;
            s_axi_wready  <= 1'b0;
            if (aw_take) begin
                s_axi_awready <= 1'b1;
                s_axi_wready  <= 1'b1;
                w_pend <= 1'b1;
                w_addr <= s_axi_awaddr;
                w_data <= s_axi_wdata;
                w_wait <= (s_axi_awaddr[31:2] == {20'd0, A_DELAYED[11:2]}) ? resp_delay : 32'd0;
            end else if (w_pend && w_wait != 32'd0) begin
                w_wait <= w_wait - 32'd1;
            end else if (w_go) begin
                w_pend       <= 1'b0;
                s_axi_bvalid <= 1'b1;
                s_axi_bresp  <= w_resp;
                if (w_ok && w_reg == 2'd0 && wa == A_CTRL && w_data[0])
                    reset_left <= RESET_CYC32;
            end
            if (s_axi_bvalid && s_axi_bready) s_axi_bvalid <= 1'b0;

            // read channel
            s_axi_arready <= 1'b0;
            r_ram <= 1'b0;
            if (ar_take) begin
                s_axi_arready <= 1'b1;
                r_pend <= 1'b1;
                r_addr <= s_axi_araddr;
                r_wait <= (s_axi_araddr[31:2] == {20'd0, A_DELAYED[11:2]}) ? resp_delay : 32'd0;
            end else if (r_pend && r_wait != 32'd0) begin
                r_wait <= r_wait - 32'd1;
            end else if (r_go) begin
                r_pend <= 1'b0;
                if (r_inmap && r_reg == 2'd1) begin
                    r_ram <= 1'b1;              // ram_q is ready next cycle
                end else begin
                    s_axi_rvalid <= 1'b1;
                    if (!r_inmap || (r_reg == 2'd0 && r_dec)) begin
                        s_axi_rresp <= DECERR;
                        s_axi_rdata <= 32'd0;
                    end else if (r_reg == 2'd2) begin
                        s_axi_rresp <= OKAY;    // the push window is write-only
                        s_axi_rdata <= 32'd0;
                    end else if (r_reg == 2'd3) begin
                        // A pop; the empty FIFO refuses it (REFUSED on the wire).
                        s_axi_rresp <= (fifo_level != 5'd0) ? OKAY : SLVERR;
                        s_axi_rdata <= (fifo_level != 5'd0) ? fifo[fifo_rd] : 32'd0;
                    end else begin
                        s_axi_rresp <= OKAY;
                        s_axi_rdata <= r_val;
                    end
                end
                if (r_cyc_lo) cycle_hi_latch <= cycles[63:32];
            end
            if (r_ram) begin
                s_axi_rvalid <= 1'b1;
                s_axi_rresp  <= OKAY;
                s_axi_rdata  <= ram_q;
            end
            if (s_axi_rvalid && s_axi_rready) s_axi_rvalid <= 1'b0;
        end
    end

    // ---- registers a soft reset returns to their reset values ----------------------------------
    wire soft_rst = w_ok && (w_reg == 2'd0) && (wa == A_CTRL) && w_data[0];
    wire tg_ctrl = w_ok && (w_reg == 2'd0) && (wa == A_TG_CTRL);
    wire push = w_ok && (w_reg == 2'd2);

    always @(posedge clk) begin
        if (rst || soft_rst) begin
            scratch     <= 32'd0;
            resp_delay  <= 32'd0;
            delayed     <= 32'd0;
            fifo_rd     <= 4'd0;
            fifo_wr     <= 4'd0;
            fifo_level  <= 5'd0;
            tg_payload  <= 16'd64;
            tg_gap      <= 16'd0;
            tg_count    <= 32'd1;
            tg_busy     <= 1'b0;
            tg_done     <= 1'b0;
            tg_sent     <= 32'd0;
            tg_bytes    <= 64'd0;
            tg_bytes_hi_latch <= 32'd0;
            tg_cycles   <= 32'd0;
            tg_run_pkts <= 32'd0;
            tg_pc       <= 17'd0;
        end else begin
            if (w_ok && w_reg == 2'd0) begin
                case (wa)
                    A_SCRATCH:    scratch    <= w_data;
                    A_RESP_DELAY: resp_delay <= w_data;
                    A_DELAYED:    delayed    <= w_data;
                    A_TG_PAYLOAD: tg_payload <= w_data[15:0];
                    A_TG_GAP:     tg_gap     <= w_data[15:0];
                    A_TG_COUNT:   tg_count   <= w_data;
                    default: ;
                endcase
            end
            // FIFO: a push into a full FIFO is lost; a pop of an empty one is refused.
            if (push && fifo_level != 5'd16) begin
                fifo[fifo_wr] <= w_data;
                fifo_wr <= fifo_wr + 4'd1;
            end
            if (r_pop && fifo_level != 5'd0) fifo_rd <= fifo_rd + 4'd1;
            fifo_level <= fifo_level + {4'd0, push && fifo_level != 5'd16} - {4'd0, r_pop && fifo_level != 5'd0};
            if (r_tgb_lo) tg_bytes_hi_latch <= tg_bytes[63:32];

            // traffic generator
            if (tg_ctrl && w_data[2]) begin                     // CLEAR
                tg_sent   <= 32'd0;
                tg_bytes  <= 64'd0;
                tg_cycles <= 32'd0;
                tg_done   <= 1'b0;
            end
            if (tg_ctrl && w_data[1]) begin                     // STOP: a packet under way is not counted
                tg_busy <= 1'b0;
                tg_done <= tg_busy | tg_done;
            end else if (tg_ctrl && w_data[0] && !tg_busy) begin // START (ignored while running)
                tg_busy     <= 1'b1;
                tg_done     <= 1'b0;
                tg_run_pkts <= 32'd0;
                tg_pc       <= 17'd0;
            end else if (tg_busy) begin
                tg_cycles <= tg_cycles + 32'd1;
                if (tg_last_word) begin
                    tg_sent     <= tg_sent + 32'd1;
                    tg_bytes    <= tg_bytes + {48'd0, tg_len};
                    tg_run_pkts <= tg_run_pkts + 32'd1;
                end
                if (tg_pc == tg_slot - 17'd1) begin               // the slot's last cycle
                    tg_pc <= 17'd0;
                    if (tg_count != 32'd0 && tg_run_done == tg_count) begin
                        tg_busy <= 1'b0;
                        tg_done <= 1'b1;
                    end
                end else begin
                    tg_pc <= tg_pc + 17'd1;
                end
            end
        end
    end

    // Protection bits and byte strobes are not used: every access is a whole word.
    wire unused_ok = &{1'b0, s_axi_awprot, s_axi_arprot, s_axi_wstrb};
endmodule

`default_nettype wire
