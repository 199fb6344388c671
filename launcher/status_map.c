/* SPDX-License-Identifier: MIT */
/*
 * The status map (--status-map FILE.png): a picture of every put's chunk
 * grid, one panel per put stacked top to bottom under its name, each chunk
 * a square in its outcome's colour, and a legend of the outcomes present
 * with their counts.  Grids of more than two dimensions are projected onto
 * their last two: a square shows the worst outcome of the chunks behind
 * it (a failure over a chunk upstream of one, over a cancelled one, over
 * ok), and grids too large for the picture put several chunks in a square
 * the same way.
 *
 * DESIGN: the text is drawn with a 3 x 5 pixel font of the characters the
 * names and codes use, scaled 2x, so the picture needs nothing but libpng;
 * the geometry of each panel is printed on stderr so a script (and the
 * test) can find a chunk's square without parsing the picture.
 */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"
#include "status_map.h"

#define MAP_SIDE 512 /* largest panel side in pixels */
#define MAP_CELL 16  /* largest square per chunk */
#define MAP_MARGIN 8 /* around and between panels */
#define FONT_SCALE 2 /* font pixels per glyph pixel */
#define GLYPH_W 3
#define GLYPH_H 5
#define TEXT_H (GLYPH_H * FONT_SCALE + 4) /* a line of text with its spacing */
#define PANEL_W_MIN 240                   /* room for the title */

/* ---- a 3 x 5 font ------------------------------------------------------------------ */

/* Rows top to bottom, 3 bits each (4 = left column). */
struct glyph {
    char c;
    unsigned char rows[GLYPH_H];
};

static const struct glyph font[] = {
    {'A', {2, 5, 7, 5, 5}}, {'B', {6, 5, 6, 5, 6}}, {'C', {3, 4, 4, 4, 3}}, {'D', {6, 5, 5, 5, 6}},
    {'E', {7, 4, 6, 4, 7}}, {'F', {7, 4, 6, 4, 4}}, {'G', {3, 4, 5, 5, 3}}, {'H', {5, 5, 7, 5, 5}},
    {'I', {7, 2, 2, 2, 7}}, {'J', {1, 1, 1, 5, 2}}, {'K', {5, 5, 6, 5, 5}}, {'L', {4, 4, 4, 4, 7}},
    {'M', {5, 7, 7, 5, 5}}, {'N', {6, 5, 5, 5, 5}}, {'O', {2, 5, 5, 5, 2}}, {'P', {6, 5, 6, 4, 4}},
    {'Q', {2, 5, 5, 6, 3}}, {'R', {6, 5, 6, 5, 5}}, {'S', {3, 4, 2, 1, 6}}, {'T', {7, 2, 2, 2, 2}},
    {'U', {5, 5, 5, 5, 7}}, {'V', {5, 5, 5, 5, 2}}, {'W', {5, 5, 7, 7, 5}}, {'X', {5, 5, 2, 5, 5}},
    {'Y', {5, 5, 2, 2, 2}}, {'Z', {7, 1, 2, 4, 7}}, {'0', {7, 5, 5, 5, 7}}, {'1', {2, 6, 2, 2, 7}},
    {'2', {6, 1, 2, 4, 7}}, {'3', {6, 1, 2, 1, 6}}, {'4', {5, 5, 7, 1, 1}}, {'5', {7, 4, 6, 1, 6}},
    {'6', {3, 4, 7, 5, 7}}, {'7', {7, 1, 1, 2, 2}}, {'8', {7, 5, 7, 5, 7}}, {'9', {7, 5, 7, 1, 6}},
    {'-', {0, 0, 7, 0, 0}}, {'_', {0, 0, 0, 0, 7}}, {':', {0, 2, 0, 2, 0}}, {'.', {0, 0, 0, 0, 2}},
    {',', {0, 0, 0, 2, 4}}, {'(', {1, 2, 2, 2, 1}}, {')', {4, 2, 2, 2, 4}}, {'/', {1, 1, 2, 4, 4}},
    {'=', {0, 7, 0, 7, 0}}, {'x', {0, 5, 2, 5, 0}}, {'?', {6, 1, 2, 0, 2}},
};

static const unsigned char *
glyph_of(char c)
{
    if (c >= 'a' && c <= 'z' && c != 'x')
        c = (char)(c - 'a' + 'A');
    for (size_t i = 0; i < sizeof(font) / sizeof(font[0]); i++)
        if (font[i].c == c)
            return font[i].rows;
    return c == ' ' ? NULL : font[sizeof(font) / sizeof(font[0]) - 1].rows; /* '?' */
}

/* ---- the canvas --------------------------------------------------------------------- */

struct rgb {
    unsigned char r, g, b;
};

struct canvas {
    uint32_t w, h;
    unsigned char *px; /* w * h * 3 */
};

static void
fill(struct canvas *cv, uint32_t x, uint32_t y, uint32_t w, uint32_t h, struct rgb c)
{
    for (uint32_t j = y; j < y + h && j < cv->h; j++)
        for (uint32_t i = x; i < x + w && i < cv->w; i++) {
            unsigned char *p = cv->px + ((size_t)j * cv->w + i) * 3;
            p[0] = c.r;
            p[1] = c.g;
            p[2] = c.b;
        }
}

/* Draw `text` with its top left at x, y; the width drawn. */
static uint32_t
text(struct canvas *cv, uint32_t x, uint32_t y, const char *s, struct rgb c)
{
    uint32_t x0 = x;
    for (; *s != '\0'; s++) {
        const unsigned char *g = glyph_of(*s);
        for (int r = 0; g != NULL && r < GLYPH_H; r++)
            for (int k = 0; k < GLYPH_W; k++)
                if (g[r] & (4 >> k))
                    fill(cv, x + (uint32_t)k * FONT_SCALE, y + (uint32_t)r * FONT_SCALE, FONT_SCALE,
                         FONT_SCALE, c);
        x += (GLYPH_W + 1) * FONT_SCALE;
    }
    return x - x0;
}

static uint32_t
text_width(const char *s)
{
    return (uint32_t)strlen(s) * (GLYPH_W + 1) * FONT_SCALE;
}

/* ---- outcomes ----------------------------------------------------------------------- */

/* Outcomes drawn, by severity: worse outcomes hide better ones behind them. */
enum { OUT_OK, OUT_SKIPPED, OUT_NOT_RUN, OUT_UPSTREAM, OUT_FAILED };

static int
severity(uint8_t code)
{
    switch (code) {
    case SL_OK:
        return OUT_OK;
    case SL_ESKIPPED:
        return OUT_SKIPPED;
    case SL_ECANCELED:
        return OUT_NOT_RUN;
    case SL_EUPSTREAM:
    case SL_EREMOTE:
        return OUT_UPSTREAM;
    default:
        return code < SL_STATUS_COUNT_ ? OUT_FAILED : OUT_NOT_RUN; /* past the list: not run */
    }
}

/* A code's colour: fixed for each code, so maps of many runs compare. */
static struct rgb
colour_of(uint8_t code)
{
    switch (code) {
    case SL_OK:
        return (struct rgb){46, 160, 67};
    case SL_ESKIPPED:
        return (struct rgb){186, 228, 179};
    case SL_EUPSTREAM:
        return (struct rgb){255, 165, 0};
    case SL_EREMOTE:
        return (struct rgb){255, 210, 120};
    case SL_ECORRUPT:
        return (struct rgb){214, 39, 40};
    case SL_EIO:
        return (struct rgb){148, 103, 189};
    case SL_ENOTFOUND:
        return (struct rgb){31, 119, 180};
    case SL_ENETWORK:
        return (struct rgb){140, 86, 75};
    case SL_ETIMEDOUT:
        return (struct rgb){227, 119, 194};
    case SL_EHTTP:
        return (struct rgb){188, 189, 34};
    case SL_ECONFLICT:
        return (struct rgb){23, 190, 207};
    case SL_ENOSPC:
        return (struct rgb){0, 0, 128};
    case SL_EACCES:
        return (struct rgb){128, 0, 0};
    case SL_ENOMEM:
        return (struct rgb){0, 0, 0};
    default:
        return code < SL_STATUS_COUNT_ ? (struct rgb){96, 0, 96} : (struct rgb){160, 160, 160};
    }
}

/* The code to show for `code`: those past the list are "not run". */
static uint8_t
shown(uint8_t code)
{
    return code < SL_STATUS_COUNT_ ? code : (uint8_t)SL_ECANCELED;
}

static const char *
code_name(uint8_t code)
{
    return code == SL_OK ? "OK" : code == SL_ECANCELED ? "NOT RUN" : sl_status_name(code);
}

/* ---- panels ------------------------------------------------------------------------- */

struct panel {
    struct sl_put_status st;
    uint64_t rows, cols; /* chunks along the last two grid dimensions */
    uint64_t per;        /* chunks per square along each side */
    uint32_t cell;       /* square side in pixels */
    uint32_t x, y;       /* top left of the squares */
    uint32_t w, h;       /* the squares' extent */
};

static void
panel_size(struct panel *p)
{
    const struct sl_grid *g = p->st.grid;
    p->rows = g->rank >= 2 ? g->n_chunks[g->rank - 2] : 1;
    p->cols = g->rank >= 1 ? g->n_chunks[g->rank - 1] : 1;
    uint64_t longer = p->rows > p->cols ? p->rows : p->cols;
    p->per = longer > MAP_SIDE ? (longer + MAP_SIDE - 1) / MAP_SIDE : 1;
    uint64_t squares = (longer + p->per - 1) / p->per;
    uint64_t cell = MAP_SIDE / (squares > 0 ? squares : 1);
    p->cell = (uint32_t)(cell > MAP_CELL ? MAP_CELL : cell < 1 ? 1 : cell);
    p->w = (uint32_t)((p->cols + p->per - 1) / p->per) * p->cell;
    p->h = (uint32_t)((p->rows + p->per - 1) / p->per) * p->cell;
}

/* Draw the squares: the worst code of the chunks behind each. */
static void
panel_draw(struct canvas *cv, const struct panel *p, uint64_t counts[256])
{
    uint64_t sq_rows = (p->rows + p->per - 1) / p->per, sq_cols = (p->cols + p->per - 1) / p->per;
    uint8_t *worst = calloc((size_t)(sq_rows * sq_cols), 1);
    int *sev = calloc((size_t)(sq_rows * sq_cols), sizeof(int));
    if (worst == NULL || sev == NULL) {
        free(worst);
        free(sev);
        return;
    }
    for (uint64_t k = 0; k < p->st.grid->n_total; k++) {
        uint8_t c = shown(p->st.codes[k]);
        counts[c]++;
        uint64_t plane = p->rows * p->cols;
        uint64_t r = (k % plane) / p->cols, col = k % p->cols;
        size_t at = (size_t)((r / p->per) * sq_cols + col / p->per);
        int s = severity(c);
        if (s > sev[at] || (s == sev[at] && c > worst[at] && s == OUT_FAILED)) {
            sev[at] = s;
            worst[at] = c;
        }
    }
    for (uint64_t r = 0; r < sq_rows; r++)
        for (uint64_t c = 0; c < sq_cols; c++) {
            uint32_t gap = p->cell >= 4 ? 1 : 0; /* a grid line between squares */
            fill(cv, p->x + (uint32_t)c * p->cell, p->y + (uint32_t)r * p->cell, p->cell - gap,
                 p->cell - gap, colour_of(worst[r * sq_cols + c]));
        }
    free(worst);
    free(sev);
}

int
status_map_write(const sl_plan *plan, const char *path)
{
    const sl_graph *g = sl_plan_graph(plan);
    uint32_t n_nodes = sl_graph_node_count(g), n = 0;
    struct panel *panels = calloc(n_nodes > 0 ? n_nodes : 1, sizeof(*panels));
    if (panels == NULL) {
        fprintf(stderr, "sluice: --status-map %s: out of memory\n", path);
        return 1;
    }
    for (uint32_t id = 0; id < n_nodes; id++)
        if (sl_plan_put_status(plan, id, &panels[n].st, NULL) == SL_OK)
            panel_size(&panels[n++]);
    /* Layout: panels top to bottom, each under its title; then the legend. */
    uint32_t w = PANEL_W_MIN, y = MAP_MARGIN;
    for (uint32_t i = 0; i < n; i++) {
        char title[160];
        snprintf(title, sizeof(title), "%s", panels[i].st.name);
        uint32_t tw = text_width(title);
        w = tw > w ? tw : w;
        w = panels[i].w > w ? panels[i].w : w;
        panels[i].x = MAP_MARGIN;
        panels[i].y = y + TEXT_H;
        y = panels[i].y + panels[i].h + MAP_MARGIN;
    }
    uint64_t counts[256] = {0};
    uint32_t legend_y = y;
    struct canvas cv = {.w = w + 2 * MAP_MARGIN, .h = legend_y + 16 * TEXT_H + MAP_MARGIN};
    cv.px = malloc((size_t)cv.w * cv.h * 3);
    if (cv.px == NULL) {
        free(panels);
        fprintf(stderr, "sluice: --status-map %s: out of memory\n", path);
        return 1;
    }
    memset(cv.px, 255, (size_t)cv.w * cv.h * 3);
    const struct rgb ink = {0, 0, 0};
    for (uint32_t i = 0; i < n; i++) {
        text(&cv, MAP_MARGIN, panels[i].y - TEXT_H, panels[i].st.name, ink);
        panel_draw(&cv, &panels[i], counts);
    }
    /* The legend: a swatch and "CODE count" per outcome present. */
    uint32_t ly = legend_y, lines = 0;
    for (int c = 0; c < 256 && lines < 16; c++) {
        if (counts[c] == 0)
            continue;
        char label[96];
        snprintf(label, sizeof(label), "%s %llu", code_name((uint8_t)c),
                 (unsigned long long)counts[c]);
        fill(&cv, MAP_MARGIN, ly, GLYPH_H * FONT_SCALE, GLYPH_H * FONT_SCALE,
             colour_of((uint8_t)c));
        text(&cv, MAP_MARGIN + GLYPH_H * FONT_SCALE + 6, ly, label, ink);
        ly += TEXT_H;
        lines++;
    }
    cv.h = ly + MAP_MARGIN; /* rows past it are cut */
    png_image img;
    memset(&img, 0, sizeof(img));
    img.version = PNG_IMAGE_VERSION;
    img.width = cv.w;
    img.height = cv.h;
    img.format = PNG_FORMAT_RGB;
    int ok = png_image_write_to_file(&img, path, 0, cv.px, (png_int_32)(cv.w * 3), NULL);
    if (!ok) {
        fprintf(stderr, "sluice: --status-map %s: cannot write it: %s\n", path, img.message);
    } else {
        fprintf(stderr, "sluice: status map %s: %u x %u pixels\n", path, cv.w, cv.h);
        for (uint32_t i = 0; i < n; i++)
            fprintf(stderr,
                    "sluice: status map: put \"%s\" at %u,%u: %llu x %llu chunks, %llu per "
                    "square of %u px\n",
                    panels[i].st.name, panels[i].x, panels[i].y, (unsigned long long)panels[i].rows,
                    (unsigned long long)panels[i].cols, (unsigned long long)panels[i].per,
                    panels[i].cell);
    }
    free(cv.px);
    free(panels);
    return ok ? 0 : 1;
}
