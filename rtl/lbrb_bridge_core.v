// The frame engine of the labrunner UART bridge, wire format version 1
// (docs/uart-bridge.md): it finds request frames in the received byte stream,
// checks them, executes them on the bus master and sends the response, and
// replays the remembered response when the host retries.
//
// Received bytes go into a ring buffer; the parser reads them from there, so
// that after a rejected candidate (a header that cannot start a request, a
// CRC mismatch, a partial frame the line left waiting too long) it can drop
// only the candidate's first sync byte and scan again from the byte after
// it, bytes already received included ("Resynchronisation"). Bytes keep
// arriving into the ring while a request executes and its answer goes out.
//
// Request data words and read data share one word buffer of two banks: a
// request's data (WRITE/WRITE_BURST) and the data it reads (READ/READ_BURST)
// live in the bank that is not the remembered response's, so neither a new
// frame nor a damaged one can overwrite the answer a retry replays.
`default_nettype none

module lbrb_bridge_core #(
    parameter [31:0]  DEVICE_ID = 32'h0000_0000,
    // Largest COUNT executed (INFO word 2): 2..256. Bursts
    // above it are answered BAD_COUNT.
    parameter integer MAX_COUNT = 256,
    // Cycles a partial frame may wait for its next byte (100 ms).
    parameter integer PARTIAL_TIMEOUT_CYCLES = 10_000_000,
    // SLVERR is REFUSED; with 1, SLVERR on a write is READ_ONLY instead.
    parameter integer SLVERR_WRITE_IS_READ_ONLY = 0
) (
    input  wire        clk,
    input  wire        rst,          // synchronous, active high

    input  wire        rx_valid,     // a byte from the UART receiver
    input  wire [7:0]  rx_data,
    output reg         tx_valid,     // a byte for the UART transmitter
    output reg  [7:0]  tx_data,
    input  wire        tx_ready,

    input  wire        busy,         // the design cannot execute now: answer BUSY

    output reg         bus_req,      // one-cycle request to the bus master
    output reg         bus_write,
    output reg  [31:0] bus_addr,
    output reg  [31:0] bus_wdata,
    input  wire        bus_ready,
    input  wire        bus_done,
    input  wire        bus_timeout,
    input  wire [1:0]  bus_resp,
    input  wire [31:0] bus_rdata,

    // One-cycle event pulses, for counters a design may expose.
    output reg         ev_request,   // a request executed (not a replay, not BUSY)
    output reg         ev_replay,    // a retry answered with the remembered response
    output reg         ev_busy,      // a request answered BUSY
    output reg         ev_reject,    // a candidate frame dropped (header, CRC or timeout)
    output reg         ev_overrun    // a received byte lost: the ring was full
);
    // ---- protocol constants (docs/uart-bridge.md) --------------------------------------------
    localparam [7:0] REQ_SYNC0 = 8'hA5, REQ_SYNC1 = 8'h5A;
    localparam [7:0] RSP_SYNC0 = 8'h5A, RSP_SYNC1 = 8'hA5;
    localparam [7:0] CMD_INFO = 8'h00, CMD_READ = 8'h01, CMD_WRITE = 8'h02,
                     CMD_READ_BURST = 8'h03, CMD_WRITE_BURST = 8'h04;
    localparam [7:0] ST_OK = 8'h00, ST_BUS_ERROR = 8'h01, ST_ALIGN = 8'h02, ST_BAD_COUNT = 8'h03,
                     ST_BAD_CMD = 8'h04, ST_BUSY = 8'h05, ST_READ_ONLY = 8'h06, ST_REFUSED = 8'h07;
    localparam [31:0] INFO_MAGIC = 32'h4252424C; // "LBRB"
    localparam [31:0] INFO_VERSION = 32'd1;
    localparam [31:0] INFO_MAX = MAX_COUNT;
    localparam [15:0] FRAME_MAX = 16'd256;       // COUNT a data-carrying frame may have

    // ---- sizes ---------------------------------------------------------------------------------
    localparam integer RING_AW = 11;             // 2048 bytes: a longest frame (1036) and more
    localparam integer PW = RING_AW + 1;         // ring pointers carry a wrap bit
    localparam integer IW = $clog2(MAX_COUNT);   // word index within a bank
    localparam integer TW = $clog2(PARTIAL_TIMEOUT_CYCLES + 1);
    localparam [TW-1:0] TMAX = PARTIAL_TIMEOUT_CYCLES[TW-1:0];
    localparam [15:0] MAXC16 = MAX_COUNT[15:0];
    localparam [8:0]  MAXC9 = MAX_COUNT[8:0];

    // ---- states --------------------------------------------------------------------------------
    localparam [4:0] S_HUNT0 = 5'd0,   // looking for SYNC0
                     S_HUNT1 = 5'd1,   // SYNC0 seen at cand, looking for SYNC1
                     S_HDR   = 5'd2,   // SEQ .. COUNT
                     S_DATA  = 5'd3,   // write data
                     S_CRC0  = 5'd4,
                     S_CRC1  = 5'd5,
                     S_EXEC  = 5'd6,   // decide: replay, error, or run the words
                     S_WORD  = 5'd7,   // next word of the request
                     S_WRD1  = 5'd8,   // fetch the write data word
                     S_WRD2  = 5'd9,
                     S_WAIT  = 5'd10,  // bus transaction
                     S_FIN   = 5'd11,  // answer with fin_status
                     S_TXH   = 5'd12,  // response header
                     S_TXF   = 5'd13,  // fetch a data word
                     S_TXL   = 5'd14,
                     S_TXD   = 5'd15,  // data bytes
                     S_TXC   = 5'd16;  // CRC bytes

    reg [4:0] state;

    // ---- receive ring --------------------------------------------------------------------------
    reg [7:0]    ring [0:(1<<RING_AW)-1];
    reg [7:0]    ring_q;
    reg [PW-1:0] wr_ptr;     // next byte written
    reg [PW-1:0] rd_ptr;     // next byte fetched by the parser
    reg [PW-1:0] cand;       // first byte still needed: the candidate frame's first sync byte
    reg [PW-1:0] f_pos;      // position of the byte in ring_q
    reg          f_valid;    // ring_q holds the byte at f_pos, not yet parsed

    wire [PW-1:0] fill     = wr_ptr - cand;
    wire          ring_full = fill[PW-1];
    wire          ring_we  = rx_valid && !ring_full;

    always @(posedge clk) begin
        if (ring_we) ring[wr_ptr[RING_AW-1:0]] <= rx_data;
        ring_q <= ring[rd_ptr[RING_AW-1:0]];
    end

    // Cycles since the last received byte, saturating at the partial-frame timeout.
    reg [TW-1:0] quiet;
    always @(posedge clk) begin
        if (rst || rx_valid) quiet <= {TW{1'b0}};
        else if (quiet != TMAX) quiet <= quiet + 1'b1;
    end

    // ---- word buffer: two banks of MAX_COUNT words ---------------------------------------------
    reg [31:0]   wbuf [0:(2<<IW)-1];
    reg          wb_we;
    reg [IW:0]   wb_waddr;
    reg [31:0]   wb_wdata;
    reg [IW:0]   wb_raddr;
    reg [31:0]   wb_q;
    always @(posedge clk) begin
        if (wb_we) wbuf[wb_waddr] <= wb_wdata;
        wb_q <= wbuf[wb_raddr];
    end

    // ---- CRC -----------------------------------------------------------------------------------
    reg  [15:0] crc_rx, crc_tx;
    wire [15:0] crc_rx_next, crc_tx_next;
    lbrb_crc16 u_crc_rx (.crc_in(crc_rx), .data(ring_q), .crc_out(crc_rx_next));
    lbrb_crc16 u_crc_tx (.crc_in(crc_tx), .data(tx_data), .crc_out(crc_tx_next));

    // ---- the request being parsed or executed ---------------------------------------------------
    reg [3:0]  hidx;         // header byte index, 2..9
    reg [7:0]  h_seq, h_cmd;
    reg [31:0] h_addr;
    reg [15:0] h_count;
    reg [7:0]  crc_lo;
    reg [15:0] h_crc;        // the request's CRC field
    reg [9:0]  dbytes;       // data bytes left, minus one
    reg [1:0]  dsub;         // byte within the data word
    reg [8:0]  pwidx;        // data word index while parsing
    reg [23:0] wacc;         // data word being assembled
    reg        bank_in;      // bank for this request's words

    wire h_has_data = (h_cmd == CMD_WRITE) || (h_cmd == CMD_WRITE_BURST);
    wire h_write    = h_has_data;
    wire [15:0] hdr_count = {ring_q, h_count[7:0]};   // COUNT while its last byte is parsed
    // Data bytes minus one, for COUNT 1..256 (256 wraps to 0: 1023, right).
    wire [9:0]  dlen_m1 = {hdr_count[7:0], 2'b00} - 10'd1;
    // A header that cannot start a request: the response bit set (an echo),
    // or a data-carrying COUNT above 256 (its length cannot be right).
    wire hdr_bad = h_cmd[7] || (((h_cmd == CMD_WRITE) || (h_cmd == CMD_WRITE_BURST)) && (hdr_count > FRAME_MAX));

    // ---- execution -----------------------------------------------------------------------------
    reg [32:0] x_addr;       // address of the current word; bit 32: past the 32-bit space
    reg [8:0]  x_idx;        // current word
    reg [7:0]  fin_status;

    // The remembered request and response, and the response being sent.
    reg        have_last;
    reg [7:0]  last_seq;
    reg [15:0] last_crc;
    reg [7:0]  rem_cmd, rem_status;
    reg [8:0]  rem_count;
    reg        rem_bank;
    reg [7:0]  cur_seq, cur_cmd, cur_status;
    reg [8:0]  cur_count;
    reg        cur_bank;

    wire is_retry = have_last && (h_seq == last_seq) && (h_crc == last_crc);
    wire count_bad =
        ((h_cmd == CMD_READ || h_cmd == CMD_WRITE) && h_count != 16'd1) ||
        ((h_cmd == CMD_READ_BURST || h_cmd == CMD_WRITE_BURST) && (h_count == 16'd0 || h_count > MAXC16));

    // ---- transmit ------------------------------------------------------------------------------
    reg [2:0]  tph;          // header byte 0..6
    reg [8:0]  twidx;        // data word
    reg [1:0]  tsub;         // byte within the word
    reg [31:0] tword;
    reg        tcrc_hi;

    function [7:0] hdr_byte;
        input [2:0] i;
        input [7:0] seq, cmd, status;
        input [8:0] count;
        case (i)
            3'd0: hdr_byte = RSP_SYNC0;
            3'd1: hdr_byte = RSP_SYNC1;
            3'd2: hdr_byte = seq;
            3'd3: hdr_byte = cmd | 8'h80;
            3'd4: hdr_byte = status;
            3'd5: hdr_byte = count[7:0];
            default: hdr_byte = {7'd0, count[8]};
        endcase
    endfunction

    function [31:0] info_word;
        input [1:0] i;
        case (i)
            2'd0: info_word = INFO_MAGIC;
            2'd1: info_word = INFO_VERSION;
            2'd2: info_word = INFO_MAX;
            default: info_word = DEVICE_ID;
        endcase
    endfunction

    // The word a response's data bytes come from: INFO's are constants.
    wire [31:0] tx_word = (cur_cmd == CMD_INFO) ? info_word(twidx[1:0]) : wb_q;

    wire parsing = (state == S_HUNT0) || (state == S_HUNT1) || (state == S_HDR) ||
                   (state == S_DATA) || (state == S_CRC0) || (state == S_CRC1);
    wire starved = (rd_ptr == wr_ptr) && !f_valid;

    always @(posedge clk) begin
        wb_we      <= 1'b0;
        bus_req    <= 1'b0;
        ev_request <= 1'b0;
        ev_replay  <= 1'b0;
        ev_busy    <= 1'b0;
        ev_reject  <= 1'b0;
        ev_overrun <= rx_valid && ring_full;
        if (ring_we) wr_ptr <= wr_ptr + 1'b1;
        if (rst) begin
            state      <= S_HUNT0;
            wr_ptr     <= {PW{1'b0}};
            rd_ptr     <= {PW{1'b0}};
            cand       <= {PW{1'b0}};
            f_pos      <= {PW{1'b0}};
            f_valid    <= 1'b0;
            crc_rx     <= 16'hFFFF;
            crc_tx     <= 16'hFFFF;
            hidx       <= 4'd0;
            h_seq      <= 8'h00;
            h_cmd      <= 8'h00;
            h_addr     <= 32'h0;
            h_count    <= 16'h0;
            crc_lo     <= 8'h00;
            h_crc      <= 16'h0;
            dbytes     <= 10'd0;
            dsub       <= 2'd0;
            pwidx      <= 9'd0;
            wacc       <= 24'h0;
            bank_in    <= 1'b0;
            wb_waddr   <= {(IW+1){1'b0}};
            wb_wdata   <= 32'h0;
            wb_raddr   <= {(IW+1){1'b0}};
            x_addr     <= 33'h0;
            x_idx      <= 9'd0;
            fin_status <= ST_OK;
            have_last  <= 1'b0;
            last_seq   <= 8'h00;
            last_crc   <= 16'h0;
            rem_cmd    <= 8'h00;
            rem_status <= ST_OK;
            rem_count  <= 9'd0;
            rem_bank   <= 1'b0;
            cur_seq    <= 8'h00;
            cur_cmd    <= 8'h00;
            cur_status <= ST_OK;
            cur_count  <= 9'd0;
            cur_bank   <= 1'b0;
            tph        <= 3'd0;
            twidx      <= 9'd0;
            tsub       <= 2'd0;
            tword      <= 32'h0;
            tcrc_hi    <= 1'b0;
            tx_valid   <= 1'b0;
            tx_data    <= 8'h00;
            bus_write  <= 1'b0;
            bus_addr   <= 32'h0;
            bus_wdata  <= 32'h0;
        end else if (parsing) begin
            // One byte every other cycle: fetch, then parse. A rejected
            // candidate restarts the scan at the byte after its first sync
            // byte, which is always still in the ring.
            if (f_valid) begin
                f_valid <= 1'b0;
                case (state)
                    S_HUNT0: begin
                        if (ring_q == REQ_SYNC0) begin
                            cand  <= f_pos;
                            state <= S_HUNT1;
                        end else begin
                            cand <= f_pos + 1'b1;
                        end
                    end
                    S_HUNT1: begin
                        if (ring_q == REQ_SYNC1) begin
                            state  <= S_HDR;
                            hidx   <= 4'd2;
                            crc_rx <= 16'hFFFF;
                        end else if (ring_q == REQ_SYNC0) begin
                            cand <= f_pos;
                        end else begin
                            cand  <= f_pos + 1'b1;
                            state <= S_HUNT0;
                        end
                    end
                    S_HDR: begin
                        crc_rx <= crc_rx_next;
                        hidx   <= hidx + 1'b1;
                        case (hidx)
                            4'd2: h_seq <= ring_q;
                            4'd3: h_cmd <= ring_q;
                            4'd4: h_addr[7:0] <= ring_q;
                            4'd5: h_addr[15:8] <= ring_q;
                            4'd6: h_addr[23:16] <= ring_q;
                            4'd7: h_addr[31:24] <= ring_q;
                            4'd8: h_count[7:0] <= ring_q;
                            default: begin
                                h_count[15:8] <= ring_q;
                                dbytes <= dlen_m1;
                                dsub   <= 2'd0;
                                pwidx  <= 9'd0;
                                if (hdr_bad) begin
                                    rd_ptr    <= cand + 1'b1;
                                    cand      <= cand + 1'b1;
                                    state     <= S_HUNT0;
                                    ev_reject <= 1'b1;
                                end else if (h_has_data && hdr_count != 16'd0) begin
                                    state <= S_DATA;
                                end else begin
                                    state <= S_CRC0;
                                end
                            end
                        endcase
                    end
                    S_DATA: begin
                        crc_rx <= crc_rx_next;
                        dsub   <= dsub + 1'b1;
                        dbytes <= dbytes - 1'b1;
                        wacc   <= {ring_q, wacc[23:8]};
                        if (dsub == 2'd3) begin
                            // Words beyond MAX_COUNT are parsed for the CRC
                            // but not kept: such a request is BAD_COUNT.
                            wb_we    <= (pwidx < MAXC9);
                            wb_waddr <= {bank_in, pwidx[IW-1:0]};
                            wb_wdata <= {ring_q, wacc};
                            pwidx    <= pwidx + 1'b1;
                        end
                        if (dbytes == 10'd0) state <= S_CRC0;
                    end
                    S_CRC0: begin
                        crc_lo <= ring_q;
                        state  <= S_CRC1;
                    end
                    default: begin // S_CRC1
                        if ({ring_q, crc_lo} == crc_rx) begin
                            h_crc  <= {ring_q, crc_lo};
                            cand   <= f_pos + 1'b1;
                            rd_ptr <= f_pos + 1'b1;
                            state  <= S_EXEC;
                        end else begin
                            rd_ptr    <= cand + 1'b1;
                            cand      <= cand + 1'b1;
                            state     <= S_HUNT0;
                            ev_reject <= 1'b1;
                        end
                    end
                endcase
            end else if (!starved) begin
                f_valid <= 1'b1;
                f_pos   <= rd_ptr;
                rd_ptr  <= rd_ptr + 1'b1;
            end else if (state != S_HUNT0 && quiet == TMAX) begin
                // The line went quiet in the middle of a candidate: drop its
                // first sync byte and scan what follows it again. The quiet
                // counter is not reset, so a candidate found in the rescan
                // that again waits for bytes is dropped in turn.
                rd_ptr    <= cand + 1'b1;
                cand      <= cand + 1'b1;
                state     <= S_HUNT0;
                ev_reject <= 1'b1;
            end
        end else begin
            case (state)
                S_EXEC: begin
                    x_addr <= {1'b0, h_addr};
                    x_idx  <= 9'd0;
                    if (is_retry) begin
                        // The host lost our answer: send it again, do not
                        // execute again.
                        cur_seq    <= last_seq;
                        cur_cmd    <= rem_cmd;
                        cur_status <= rem_status;
                        cur_count  <= rem_count;
                        cur_bank   <= rem_bank;
                        ev_replay  <= 1'b1;
                        tph        <= 3'd0;
                        state      <= S_TXH;
                    end else if (h_cmd > CMD_WRITE_BURST) begin
                        fin_status <= ST_BAD_CMD;
                        state      <= S_FIN;
                    end else if (h_cmd == CMD_INFO) begin
                        fin_status <= ST_OK;       // ADDR and COUNT are ignored
                        state      <= S_FIN;
                    end else if (count_bad) begin
                        fin_status <= ST_BAD_COUNT;
                        state      <= S_FIN;
                    end else if (h_addr[1:0] != 2'b00) begin
                        fin_status <= ST_ALIGN;
                        state      <= S_FIN;
                    end else if (busy || !bus_ready) begin
                        fin_status <= ST_BUSY;     // nothing executed
                        state      <= S_FIN;
                    end else begin
                        state <= S_WORD;
                    end
                end
                S_WORD: begin
                    if (x_addr[32]) begin
                        fin_status <= ST_BUS_ERROR; // a burst running off the 32-bit space
                        state      <= S_FIN;
                    end else if (h_write) begin
                        wb_raddr <= {bank_in, x_idx[IW-1:0]};
                        state    <= S_WRD1;
                    end else begin
                        bus_req   <= 1'b1;
                        bus_write <= 1'b0;
                        bus_addr  <= x_addr[31:0];
                        state     <= S_WAIT;
                    end
                end
                S_WRD1: state <= S_WRD2;
                S_WRD2: begin
                    bus_req   <= 1'b1;
                    bus_write <= 1'b1;
                    bus_addr  <= x_addr[31:0];
                    bus_wdata <= wb_q;
                    state     <= S_WAIT;
                end
                S_WAIT: begin
                    if (bus_done) begin
                        if (bus_timeout) begin
                            fin_status <= ST_BUS_ERROR;
                            state      <= S_FIN;
                        end else if (bus_resp == 2'b11) begin
                            fin_status <= ST_BUS_ERROR;    // DECERR: nothing at the address
                            state      <= S_FIN;
                        end else if (bus_resp == 2'b10) begin
                            // SLVERR: the slave was reached and refused.
                            fin_status <= (h_write && SLVERR_WRITE_IS_READ_ONLY != 0) ? ST_READ_ONLY : ST_REFUSED;
                            state      <= S_FIN;
                        end else begin
                            if (!h_write) begin
                                wb_we    <= 1'b1;
                                wb_waddr <= {bank_in, x_idx[IW-1:0]};
                                wb_wdata <= bus_rdata;
                            end
                            x_idx  <= x_idx + 1'b1;
                            x_addr <= x_addr + 33'd4;
                            if ({7'd0, x_idx} + 16'd1 == h_count) begin
                                fin_status <= ST_OK;
                                state      <= S_FIN;
                            end else begin
                                state <= S_WORD;
                            end
                        end
                    end
                end
                S_FIN: begin
                    cur_seq    <= h_seq;
                    cur_cmd    <= h_cmd;
                    cur_status <= fin_status;
                    cur_bank   <= bank_in;
                    if (fin_status != ST_OK) cur_count <= 9'd0;
                    else if (h_cmd == CMD_INFO) cur_count <= 9'd4;
                    else if (h_write) cur_count <= 9'd0;
                    else cur_count <= h_count[8:0];
                    if (fin_status == ST_BUSY) begin
                        // Not executed, so not remembered: the host's retry
                        // of it runs once the design is ready.
                        ev_busy <= 1'b1;
                    end else begin
                        ev_request <= 1'b1;
                        have_last  <= 1'b1;
                        last_seq   <= h_seq;
                        last_crc   <= h_crc;
                        rem_cmd    <= h_cmd;
                        rem_status <= fin_status;
                        rem_bank   <= bank_in;
                        bank_in    <= ~bank_in;
                        if (fin_status != ST_OK) rem_count <= 9'd0;
                        else if (h_cmd == CMD_INFO) rem_count <= 9'd4;
                        else if (h_write) rem_count <= 9'd0;
                        else rem_count <= h_count[8:0];
                    end
                    tph   <= 3'd0;
                    state <= S_TXH;
                end
                S_TXH: begin
                    if (!tx_valid) begin
                        tx_valid <= 1'b1;
                        tx_data  <= hdr_byte(tph, cur_seq, cur_cmd, cur_status, cur_count);
                        if (tph == 3'd2) crc_tx <= 16'hFFFF;
                    end else if (tx_ready) begin
                        tx_valid <= 1'b0;
                        if (tph >= 3'd2) crc_tx <= crc_tx_next;
                        tph <= tph + 1'b1;
                        if (tph == 3'd6) begin
                            twidx   <= 9'd0;
                            tcrc_hi <= 1'b0;
                            state   <= (cur_count != 9'd0) ? S_TXF : S_TXC;
                        end
                    end
                end
                S_TXF: begin
                    wb_raddr <= {cur_bank, twidx[IW-1:0]};
                    state    <= S_TXL;
                end
                S_TXL: state <= S_TXD;
                S_TXD: begin
                    if (!tx_valid) begin
                        // The first byte of a word takes the whole word.
                        tx_data  <= (tsub == 2'd0) ? tx_word[7:0] : tword[7:0];
                        if (tsub == 2'd0) tword <= tx_word;
                        tx_valid <= 1'b1;
                    end else if (tx_ready) begin
                        tx_valid <= 1'b0;
                        crc_tx   <= crc_tx_next;
                        tsub     <= tsub + 1'b1;
                        tword    <= {8'h00, tword[31:8]};
                        if (tsub == 2'd3) begin
                            twidx <= twidx + 1'b1;
                            state <= (twidx + 9'd1 == cur_count) ? S_TXC : S_TXF;
                        end
                    end
                end
                default: begin // S_TXC
                    if (!tx_valid) begin
                        tx_valid <= 1'b1;
                        tx_data  <= tcrc_hi ? crc_tx[15:8] : crc_tx[7:0];
                    end else if (tx_ready) begin
                        tx_valid <= 1'b0;
                        tcrc_hi  <= 1'b1;
                        if (tcrc_hi) state <= S_HUNT0;
                    end
                end
            endcase
        end
    end
endmodule

`default_nettype wire
