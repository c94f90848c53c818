"""Word lists the demo web writes its pages from.

Each theme has sub-topics (so two pages on one theme share some words, not all), words for URL
slugs and titles, and the section names sites file it under. A few words are shared on purpose
across themes ("star anise", "all-star game", "moon cake") so that no single word decides a label.
Every word is encodable in windows-1252: one demo host serves that charset.
"""

from __future__ import annotations

#: Everyday words that carry no topic; most of every sentence comes from here.
FILLER = """
the a an and or but of to in on at for with from by about after before during over under between
this that these those it its we our you your they their he she his her one two three first last
new old good great small large long short early late many few more most some every each other
week weekend year month day night morning evening today yesterday tomorrow season time moment
people group team club member reader visitor friend family neighbour local city town village
report story guide note update review list plan idea question answer reason result way part
place area region side point number level change start end piece word photo picture
said says told found made makes took gave came went saw seen shown known used using found
looks looked shows showed offers brings keeps helps wants needs finds takes gives tells writes
really quite very still just also often always never sometimes usually perhaps nearly almost
simple clear easy hard best better worth useful popular special recent next final whole full
""".split()

#: Names and words with accents: they exercise charsets, in utf-8 and in windows-1252 alike.
ACCENTED = """
café Jérôme Émilie Besançon Zürich naïve résumé façade Ångström São Müller Chloë Renée Noël
Québec Göteborg Dvořák Málaga crème brûlée déjà
""".split()
# Dvořák has ř, which windows-1252 lacks: the windows-1252 host uses ACCENTED_1252 instead.
ACCENTED_1252 = [w for w in ACCENTED if w not in ("Dvořák",)]

AUTHORS = [
    "Ada Brightwell", "Jérôme Martin", "Émilie Durand", "Sam Okafor", "Priya Raman", "Tom Becker",
    "Chloë Lindqvist", "Marta Nowak", "Luis Ortega", "Renée Dubois", "Kenji Sato", "Hannah Müller",
]

MONTHS = [
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
]

#: Anchor texts that say nothing about the target.
NEUTRAL_ANCHORS = ["Read more", "Continue reading", "Full story", "More", "Details", "Here"]

#: Per theme: sub-topic word lists, slug words, and section (path, name) pairs.
THEMES: dict[str, dict] = {
    "astronomy": {
        "label": "Astronomy",
        "subtopics": {
            "planets": """planet planets jupiter saturn mars venus mercury neptune uranus
                orbit orbital rings moons retrograde opposition conjunction gas giant
                atmosphere rover crater craters martian jovian perihelion aphelion""",
            "stars": """stars stellar supernova nebula nebulae constellation constellations
                magnitude luminosity red dwarf giant binary variable cepheid pulsar
                spectrum spectral parallax light-year lightyears betelgeuse sirius""",
            "galaxies": """galaxy galaxies milky andromeda cluster clusters spiral elliptical
                redshift cosmology cosmic universe expansion dark matter quasar
                black hole hubble deep-field interstellar intergalactic""",
            "observing": """telescope telescopes eyepiece aperture refractor reflector
                dobsonian binoculars tripod mount equatorial focal finder
                astrophotography exposure stargazing observatory dark-sky seeing
                light-pollution sky chart skywatchers observers""",
            "events": """eclipse eclipses lunar solar meteor meteors shower perseids
                geminids comet comets tail coma transit occultation equinox solstice
                aurora zenith horizon twilight moonrise waxing waning crescent""",
            "spaceflight": """spacecraft probe probes orbiter launch astronaut astronauts
                satellite satellites mission trajectory flyby lander rocket payload
                spaceflight telemetry asteroid asteroids kuiper voyager""",
        },
        "slug_words": """comet-watch meteor-shower lunar-eclipse saturn-rings jupiter-moons
            mars-opposition andromeda-galaxy orion-nebula dark-sky star-party
            telescope-guide deep-sky variable-stars solar-eclipse perseids geminids
            planet-parade double-stars star-clusters sky-chart asteroid-flyby
            aurora-alert messier-marathon moon-phases galaxy-hunt nebula-filters""".split(),
        "sections": [
            ("/science/astronomy/", "Astronomy"),
            ("/sky-tonight/", "Sky Tonight"),
            ("/telescopes/", "Telescopes and Gear"),
            ("/space/", "Space and Missions"),
            ("/observing/", "Observing Notes"),
        ],
    },
    "cooking": {
        "label": "Cooking",
        "subtopics": {
            "baking": """bake baking oven dough flour yeast butter sugar pastry crust loaf
                bread sourdough knead proof cookies cake frosting whisk vanilla""",
            "dinner": """recipe recipes dinner roast simmer saute garlic onion pepper salt
                sauce stew broth skillet braise chicken tomato basil olive oil""",
            "world": """curry spice spices cumin coriander noodles dumplings ginger soy
                miso tortilla salsa risotto paella tagine star anise moon cake""",
        },
        "slug_words": """sourdough-starter weeknight-pasta roast-chicken star-anise-cookies
            moon-cake tomato-soup spice-rack bread-baking lemon-tart curry-night
            pancake-stack herb-butter""".split(),
        "sections": [("/recipes/", "Recipes"), ("/baking/", "Baking"), ("/kitchen-tips/", "Kitchen Tips")],
    },
    "sports": {
        "label": "Sports",
        "subtopics": {
            "football": """football match goal goals striker midfield keeper penalty league
                season coach fixture derby stadium fans referee offside""",
            "athletics": """marathon sprint race runners training stamina relay hurdles
                finish record podium medal championship track""",
            "teamplay": """basketball tennis cricket innings serve rally dunk playoff
                tournament all-star final semifinal squad transfer rookie""",
        },
        "slug_words": """cup-final all-star-game marathon-training derby-day transfer-news
            playoff-preview tennis-open relay-record coach-interview season-review
            rising-stars match-report""".split(),
        "sections": [("/sports/", "Sports"), ("/football/", "Football"), ("/results/", "Results")],
    },
    "travel": {
        "label": "Travel",
        "subtopics": {
            "trips": """trip travel journey itinerary flight airport luggage passport hotel
                hostel booking tourist tourists sightseeing guidebook""",
            "places": """beach island mountain coast harbour museum cathedral old-town market
                vineyard valley lake ferry train railway""",
            "outdoors": """hiking trail camping tent backpack campfire summit views
                sunrise sunset road-trip scenic night-sky""",
        },
        "slug_words": """island-hopping city-break train-journey packing-list mountain-hike
            coast-road museum-tour budget-hotels night-market ferry-guide
            stargazing-holidays""".split(),
        "sections": [("/travel/", "Travel"), ("/destinations/", "Destinations"), ("/trips/", "Trips")],
    },
    "finance": {
        "label": "Money",
        "subtopics": {
            "markets": """stock stocks shares market markets investor investors index
                dividend portfolio bond bonds yield rally earnings quarterly""",
            "household": """budget savings mortgage loan interest rate rates pension tax
                taxes bills inflation salary rent credit""",
            "business": """startup company profit revenue merger chief executive board
                funding valuation bank banks economy growth""",
        },
        "slug_words": """stock-market mortgage-rates budget-tips pension-guide earnings-season
            inflation-report savings-accounts shares-rocket tax-return
            startup-funding""".split(),
        "sections": [("/money/", "Money"), ("/markets/", "Markets"), ("/business/", "Business")],
    },
    "technology": {
        "label": "Technology",
        "subtopics": {
            "gadgets": """phone phones laptop tablet battery screen charger camera gadget
                gadgets headphones smartwatch processor chip""",
            "software": """software app apps update browser code developer developers
                programming database cloud server security password privacy""",
            "web": """internet website network wifi router streaming download upload
                social platform online users data""",
        },
        "slug_words": """phone-review laptop-deals app-update password-tips wifi-fix
            streaming-guide cloud-storage battery-life browser-tricks
            smart-home""".split(),
        "sections": [("/tech/", "Technology"), ("/gadgets/", "Gadgets"), ("/reviews/", "Reviews")],
    },
    "gardening": {
        "label": "Gardening",
        "subtopics": {
            "plants": """garden gardening plant plants seeds seedlings soil compost bulbs
                roses tulips shrubs hedge perennial annual blossom""",
            "vegetables": """vegetables tomatoes potatoes beans lettuce carrots harvest
                allotment greenhouse watering mulch weeds pests""",
            "care": """prune pruning lawn mowing fertiliser pots containers shade
                sunlight frost moonflower spring autumn""",
        },
        "slug_words": """spring-bulbs tomato-growing compost-heap rose-pruning lawn-care
            greenhouse-tips moonflower-seeds allotment-diary winter-garden""".split(),
        "sections": [("/garden/", "Garden"), ("/grow/", "Grow Your Own")],
    },
    "politics": {
        "label": "Local News",
        "subtopics": {
            "council": """council councillors mayor vote votes election candidate
                campaign policy budget debate committee planning""",
            "community": """school schools library residents road roads traffic parking
                festival charity volunteers hospital police""",
        },
        "slug_words": """council-vote election-night mayor-interview school-funding
            road-works parking-plan library-hours festival-plans""".split(),
        "sections": [("/news/", "News"), ("/local/", "Local"), ("/politics/", "Politics")],
    },
    "music": {
        "label": "Music",
        "subtopics": {
            "live": """concert concerts gig tour band bands singer guitar drums stage
                festival encore setlist venue tickets""",
            "records": """album albums record vinyl single track tracks chart charts
                producer studio release rock jazz pop rising-star""",
        },
        "slug_words": """album-review tour-dates vinyl-reissue jazz-night festival-lineup
            guitar-lessons chart-toppers starlight-tour""".split(),
        "sections": [("/music/", "Music"), ("/gigs/", "Gigs")],
    },
}


def theme_words(theme: str) -> list[str]:
    """All distinct words of a theme, in a stable order."""
    words: list[str] = []
    for text in THEMES[theme]["subtopics"].values():
        for w in text.split():
            if w not in words:
                words.append(w)
    return words
