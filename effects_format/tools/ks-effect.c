/* ks-effect: validate an AR effect package (.kfx) or print what it contains.
 *
 *     ks-effect validate PKG   exit 0 and "PKG: ok" when the package is valid; otherwise the
 *                              status and the reader's message (entry, JSON path, value), exit 1
 *     ks-effect info PKG       manifest summary, layers in render order, params, states,
 *                              triggers and assets
 */
#include <stdio.h>
#include <string.h>

#include "kestrel/effect.h"

static int usage(void) {
    fprintf(stderr, "usage: ks-effect validate PKG\n       ks-effect info PKG\n");
    return 2;
}

static void print_caps(uint32_t caps) {
    int first = 1;
    for (int c = 0; c < KS_EFFECT_CAP_COUNT; c++) {
        if (!(caps & (1u << c))) continue;
        printf("%s%s", first ? "" : ", ", ks_effect_capability_string((ks_effect_capability)c));
        first = 0;
    }
    if (first) printf("(none)");
    printf("\n");
}

static void print_layer(uint32_t i, const ks_effect_layer *l) {
    printf("  [%u] %-16s %-12s blend=%s opacity=%.2f%s\n", i, l->name,
           ks_effect_layer_kind_string(l->kind), ks_effect_blend_string(l->blend), l->opacity,
           l->visible ? "" : " (hidden)");
    if (l->num_anchor_landmarks) {
        printf("       anchor landmarks:");
        for (uint32_t j = 0; j < l->num_anchor_landmarks; j++)
            printf(" %u", l->anchor_landmarks[j]);
        printf("  offset (%.3f, %.3f) scale %.3f\n", l->anchor_offset[0], l->anchor_offset[1],
               l->scale);
    }
    if (l->num_frames)
        printf("       sprite: %u frame(s) at %.1f fps%s, first %s\n", l->num_frames, l->fps,
               l->loop ? " looping" : "", l->frames[0]);
    if (l->texture[0]) printf("       texture: %s\n", l->texture);
    if (l->kind == KS_EFFECT_LAYER_MAKEUP)
        printf("       region %s colour (%.3f, %.3f, %.3f, %.3f)%s%s\n",
               ks_effect_makeup_region_string(l->region), l->color[0], l->color[1], l->color[2],
               l->color[3], l->color_param[0] ? " bound to " : "", l->color_param);
    if (l->kind == KS_EFFECT_LAYER_BEAUTY)
        printf("       smoothing %.2f whitening %.2f face_slim %.2f eye_enlarge %.2f\n",
               l->smoothing, l->whitening, l->face_slim, l->eye_enlarge);
    if (l->kind == KS_EFFECT_LAYER_MAKEUP || l->kind == KS_EFFECT_LAYER_BEAUTY ||
        l->kind == KS_EFFECT_LAYER_LUT)
        printf("       intensity %.2f%s%s\n", l->intensity,
               l->intensity_param[0] ? " bound to " : "", l->intensity_param);
    if (l->lut[0]) printf("       lut: %s\n", l->lut);
    if (l->mesh[0]) printf("       mesh: %s\n", l->mesh);
    if (l->shader[0]) printf("       shader: %s\n", l->shader);
}

static void print_info(const ks_effect *fx) {
    const ks_effect_info *in = ks_effect_get_info(fx);
    printf("id:             %s\nname:           %s\nauthor:         %s\n", in->id, in->name,
           in->author);
    printf("format_version: %u.%u.%u\n", in->version_major, in->version_minor, in->version_patch);
    printf("thumbnail:      %s\nmax_faces:      %u\nrequires:       ",
           in->thumbnail[0] ? in->thumbnail : "(none)", in->max_faces);
    print_caps(in->required_capabilities);
    printf("layers (%u, render order):\n", ks_effect_num_layers(fx));
    for (uint32_t i = 0; i < ks_effect_num_layers(fx); i++)
        print_layer(i, ks_effect_layer_at(fx, i));
    printf("parameters (%u):\n", ks_effect_num_params(fx));
    for (uint32_t i = 0; i < ks_effect_num_params(fx); i++) {
        const ks_effect_param *p = ks_effect_param_at(fx, i);
        printf("  %-16s %-6s", p->name, ks_effect_param_type_string(p->type));
        switch (p->type) {
        case KS_EFFECT_PARAM_COLOR:
            printf(" default (%.3f, %.3f, %.3f, %.3f)", p->default_color[0], p->default_color[1],
                   p->default_color[2], p->default_color[3]);
            break;
        case KS_EFFECT_PARAM_FLOAT:
            printf(" [%g, %g] default %g", p->min, p->max, p->default_value);
            break;
        case KS_EFFECT_PARAM_ENUM:
            printf(" {");
            for (uint32_t j = 0; j < p->num_options; j++)
                printf("%s%s", j ? ", " : "", p->options[j]);
            printf("} default %s", p->options[p->default_option]);
            break;
        default:
            printf(" default %s", p->default_image[0] ? p->default_image : "(app supplies)");
            break;
        }
        printf("\n");
    }
    uint32_t init = ks_effect_initial_state(fx);
    printf("states (%u):\n", ks_effect_num_states(fx));
    for (uint32_t i = 0; i < ks_effect_num_states(fx); i++) {
        const ks_effect_state *s = ks_effect_state_at(fx, i);
        printf("  %s%s:", s->name, i == init ? " (initial)" : "");
        for (uint32_t j = 0; j < s->num_actions; j++)
            printf(" %s(%s)", ks_effect_action_kind_string(s->actions[j].kind),
                   ks_effect_layer_at(fx, s->actions[j].layer)->name);
        printf("\n");
    }
    printf("triggers (%u):\n", ks_effect_num_triggers(fx));
    for (uint32_t i = 0; i < ks_effect_num_triggers(fx); i++) {
        const ks_effect_trigger *t = ks_effect_trigger_at(fx, i);
        printf("  on %s (threshold %.2f) -> %s\n", ks_effect_event_string(t->event), t->threshold,
               ks_effect_state_at(fx, t->state)->name);
    }
    printf("assets (%u):\n", ks_effect_num_assets(fx));
    for (uint32_t i = 0; i < ks_effect_num_assets(fx); i++) {
        const ks_effect_asset *a = ks_effect_asset_at(fx, i);
        printf("  %-32s %-8s %10zu bytes", a->name, ks_effect_asset_kind_string(a->kind),
               a->size_bytes);
        if (a->width_px) printf("  %ux%u", a->width_px, a->height_px);
        printf("\n");
    }
}

int main(int argc, char **argv) {
    if (argc != 3) return usage();
    int info = strcmp(argv[1], "info") == 0;
    if (!info && strcmp(argv[1], "validate") != 0) return usage();
    ks_effect *fx = NULL;
    ks_status st = ks_effect_open_file(argv[2], NULL, &fx);
    if (st != KS_STATUS_OK) {
        fprintf(stderr, "ks-effect: %s: %s\n", ks_status_string(st), ks_last_error(NULL));
        return 1;
    }
    if (info)
        print_info(fx);
    else
        printf("%s: ok\n", argv[2]);
    ks_effect_destroy(fx);
    return 0;
}
