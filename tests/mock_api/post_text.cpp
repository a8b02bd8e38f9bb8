#include "mock_api/post_text.hpp"

#include <array>
#include <iterator>
#include <string_view>

#include "mock_api/mix.hpp"

namespace tweetkeeper::mock {
namespace {

template <typename Strings>
std::string_view Pick(const Strings& from, uint64_t& seed) {
  seed = Mix(seed);
  return from[seed % std::size(from)];
}

// Sentences as people post them, by language; most posts are English (as on all three networks).
struct Language {
  std::string_view tag;
  std::string_view openers[8];
  std::string_view closers[8];
};

constexpr std::array<Language, 6> kLanguages = {{
    {"en",
     {"Just finished reading the new report on coastal erosion", "Morning run done before the rain came in",
      "Our library is extending its hours through the winter", "Finally fixed the bug that ate my whole week",
      "The city council votes on the bike lanes tonight", "Three years of data and the trend still holds",
      "Tried the new ramen place around the corner", "Thread on what we learned shipping this release"},
     {"and honestly it was worth it.", "Thoughts?", "more soon.", "Details below.",
      "Worth a read if you have ten minutes.", "Not what I expected!", "Feedback welcome.", "🙌"}},
    {"de",
     {"Heute früh mit dem Rad zur Arbeit", "Die neue Ausstellung im Stadtmuseum ist großartig",
      "Endlich Wochenende", "Unsere Studie zur Luftqualität ist erschienen", "Schnee in München",
      "Der Zug hat wieder Verspätung", "Neues Rezept ausprobiert", "Spannende Diskussion gestern Abend"},
     {"und es hat sich gelohnt.", "Was meint ihr?", "Mehr dazu bald.", "☕", "Sehr empfehlenswert!",
      "Link folgt.", "Grüße aus dem Büro.", "😄"}},
    {"fr",
     {"Premier café de la journée", "Notre rapport sur les forêts est enfin publié",
      "Quelle belle lumière ce soir sur la Seine", "Réunion très productive ce matin", "La grève continue demain",
      "Nouveau billet de blog en ligne", "Visite du marché ce samedi", "Les résultats sont arrivés"},
     {"et c'est réussi.", "Qu'en pensez-vous ?", "À suivre.", "🥐", "Merci à toute l'équipe !",
      "Plus de détails bientôt.", "Enfin !", "✨"}},
    {"es",
     {"Hoy empieza el festival de cine", "Terminamos la encuesta con más de mil respuestas",
      "Qué día tan bonito en Valencia", "Nuevo episodio del pódcast", "Por fin llegó la lluvia",
      "Leyendo sobre la historia del ferrocarril", "Gran partido anoche", "Publicamos los datos abiertos"},
     {"y valió la pena.", "¿Qué opináis?", "Más pronto.", "🎉", "¡Gracias a todos!", "Enlace abajo.",
      "Increíble.", "☀️"}},
    {"ja",
     {"今日は朝から雨です", "新しい論文が公開されました", "駅前のカフェに行ってきました",
      "週末は山に登ります", "ライブ配信を始めます", "桜がきれいに咲いています", "データを整理しています",
      "久しぶりに映画を見ました"},
     {"楽しかった！", "ぜひ読んでください。", "また後で。", "🌸", "ありがとうございます。", "詳しくはこちら。",
      "すごい。", "😊"}},
    {"pt",
     {"Começou a temporada de chuvas", "Nosso relatório anual saiu hoje", "Café da manhã em Lisboa",
      "Terminei o livro que estava lendo", "Reunião do coletivo amanhã cedo", "O jogo de ontem foi incrível",
      "Novo vídeo no canal", "Dados novos sobre o desmatamento"},
     {"e valeu a pena.", "O que vocês acham?", "Mais em breve.", "⚽", "Obrigado a todos!", "Link abaixo.",
      "Que dia!", "💚"}},
}};

constexpr std::array<std::string_view, 10> kHashtags = {"opendata", "science", "cycling", "photography", "news",
                                                        "books", "climate", "music", "caturday", "fediverse"};
constexpr std::array<std::string_view, 10> kMentions = {"ana_lima", "j_weiss", "maria_s", "tom_okafor", "hanako",
                                                        "dev_rae", "luis_m", "chloe_b", "sam_k", "nora_p"};
constexpr std::array<std::string_view, 12> kGiven = {"Ana", "Jürgen", "Maria", "Tom", "Chloé", "Luis",
                                                     "Nora", "Sam", "Aoife", "Mehmet", "Zoë", "Priya"};
constexpr std::array<std::string_view, 12> kFamily = {"Lima", "Weiß", "Santos", "Okafor", "Bernard", "Martínez",
                                                      "Petersen", "Kim", "Ó Briain", "Yılmaz", "Novák", "Iyer"};
constexpr std::array<std::string_view, 6> kJapanese = {"佐藤 花子", "鈴木 一郎", "高橋 美咲",
                                                       "田中 健", "伊藤 さくら", "渡辺 翔"};
constexpr std::array<std::string_view, 8> kBios = {
    "Birds, bikes and bad puns.", "Data journalist. Views my own.", "Librarian 📚 | she/her",
    "Climate researcher at a university you have heard of.", "Photographer based in Lisbon 📷",
    "Software, sourdough, sometimes sleep.", "Archivist. Collecting the web one page at a time.",
    "Ich poste über Züge und Kaffee ☕"};

}  // namespace

PostText MockPostText(uint64_t seed) {
  uint64_t s = Mix(seed ^ 0x706f7374ULL);
  // Two posts in three English, the rest spread over the others.
  const size_t lang = (s % 3 != 0) ? 0 : 1 + (Mix(s) % (kLanguages.size() - 1));
  const Language& l = kLanguages[lang];
  PostText out;
  out.lang = std::string(l.tag);
  out.text = std::string(Pick(l.openers, s));
  const std::string_view closer = Pick(l.closers, s);
  // "... erosion. Worth a read", "... erosion and honestly ...", "... erosion 🙌", "... 楽しかった！"
  const auto first = static_cast<unsigned char>(closer[0]);
  const bool joins = l.tag == "ja" || (first >= 'a' && first <= 'z') || first >= 0xE2;
  out.text += joins ? " " : ". ";
  out.text += closer;
  s = Mix(s);
  if (s % 4 == 0) {  // one post in four mentions someone
    out.mention = std::string(Pick(kMentions, s));
    out.text = "@" + out.mention + " " + out.text;
  }
  s = Mix(s);
  if (s % 3 == 0) {  // one in three carries a hashtag
    out.hashtag = std::string(Pick(kHashtags, s));
    out.text += " #" + out.hashtag;
  }
  return out;
}

size_t CodePoints(const std::string& utf8) {
  size_t n = 0;
  for (unsigned char c : utf8) n += (c & 0xC0) != 0x80;  // every byte but continuation bytes
  return n;
}

std::string MockDisplayName(uint64_t seed) {
  uint64_t s = Mix(seed ^ 0x6e616d65ULL);
  if (s % 8 == 0) return std::string(Pick(kJapanese, s));
  std::string name(Pick(kGiven, s));
  name += ' ';
  name += Pick(kFamily, s);
  return name;
}

std::string MockBio(uint64_t seed) {
  uint64_t s = Mix(seed ^ 0x62696fULL);
  return std::string(Pick(kBios, s));
}

}  // namespace tweetkeeper::mock
